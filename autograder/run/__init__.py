"""A grading run. Takes the checked submissions and gives grades: what is unchanged since the last run
(:mod:`.state`), the course brought up to date (:mod:`.migration`), jobs for the worker processes (:mod:`.jobs`,
:mod:`.workers`, :mod:`.worker`), the one writer of the gradebook (:mod:`.gradebook`, :mod:`.standings`),
results, report and exports (:mod:`.results`, :mod:`.report`, :mod:`.outputs`, :mod:`.lms_export`), pages
refreshed (:mod:`.feedback_refresh`); :mod:`.grading` is the orchestration. It never deletes or overwrites
instructor data implicitly.
"""
