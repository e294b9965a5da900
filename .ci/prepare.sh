#!/bin/sh
# System packages the test suite wants; .ci/run calls this before the tests on a fresh machine.
#
# bubblewrap: the sandbox in which `dp-course grade` / `check` run submissions' kernels (no network, no view
# of the course directory, own pid namespace).  Without it the grader still works, with limits only, and
# says so loudly -- and the adversarial tests then check that warning instead of the isolation.  So a
# failed install is reported, not fatal.
set -u
if command -v bwrap >/dev/null 2>&1; then
    bwrap --version
    exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "prepare.sh: WARNING: bubblewrap is missing and this user cannot install it (not root, no sudo);" \
             "grading will run without a sandbox" >&2
        exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
if $SUDO apt-get install -y --no-install-recommends bubblewrap \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends bubblewrap; }; then
    bwrap --version
else
    echo "prepare.sh: WARNING: could not install bubblewrap; grading will run without a sandbox" >&2
fi
exit 0
