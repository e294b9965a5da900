"""One notation per symbol across the lectures (issue 22, "Teaching": L, sigma vs the noise multiplier, x/y).

``docs/design.md``, lecture rule 13: $L$ is the privacy loss and nothing else ($\\kappa = \\ln(1/\\delta)$ where a
lecture needs the log of 1/delta); $\\sigma$ is the absolute standard deviation of Gaussian noise, never the
noise multiplier ($z$) or the logistic function ($\\operatorname{sig}$). Each forbidden spelling below is a form a
lecture used before the rule.
"""

from __future__ import annotations

import re

import pytest

import _notebooks as nbs

FORBIDDEN = {
    r"L\s*=\s*\\ln\s*\(?\s*1\s*/\s*\\delta": "L used for ln(1/delta): write \\kappa = \\ln(1/\\delta)",
    r"(?<![A-Za-z\\])L\s*/\s*\(\\alpha": "L/(alpha - 1) with L = ln(1/delta): write \\kappa/(\\alpha - 1)",
    r"\\sigma\s*\(\s*[a-z]\s*\^\s*\\top": "sigma(u^T theta) is the logistic function: write \\operatorname{sig}",
    r"(?<![_{])\\sigma\s*\(t\)\s*=": "sigma(t) defined as a function: sigma is the noise standard deviation",
    r"noise multiplier\s*\$\\sigma": "the noise multiplier is z, not sigma",
}


@pytest.mark.parametrize("name", nbs.lectures())
def test_one_notation_per_symbol(name: str) -> None:
    nb = nbs.read_source(name)
    found = []
    for cell in nb.cells:
        text = cell.source if cell.cell_type == "markdown" else ""
        for pattern, why in FORBIDDEN.items():
            found += [f"{cell.get('id')}: {m.group(0)!r} ({why})" for m in re.finditer(pattern, text)]
    assert not found, f"{name}: " + "; ".join(found)


def test_the_patterns_catch_the_old_spellings() -> None:
    """Each pattern fires on the spelling it was written against (so that the test above can fail)."""
    old = [r"where $L = \ln(1/\delta)$", r"$f(\alpha) = \alpha\rho + L/(\alpha - 1)$",
           r"$P(y = 1 \mid z, \theta) = \sigma(z^\top\theta)$", r"with $\sigma(t) = 1/(1 + e^{-t})$",
           r"noise multiplier $\sigma = 1$"]
    for text, pattern in zip(old, FORBIDDEN, strict=True):
        assert re.search(pattern, text), (pattern, text)
