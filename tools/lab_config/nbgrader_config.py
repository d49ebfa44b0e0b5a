# nbgrader for studying on your own with `make lab` (tools/lab.py puts this folder on JUPYTER_CONFIG_PATH).
# The Validate button of the notebook toolbar and `nbgrader validate` in the lab's terminals read it:
# there is no course and no exchange here, only your notebooks and their test cells.
c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

# The failures `nbgrader validate` prints are cut at this width; the course's messages are one line each.
c.Validator.width = 130

# Validate in a learner's words: a blank written answer names its question and says what to write
# (nbgrader's own says only "The following cell failed"). autograde/validator.py says how.
from autograde.validator import use_course_validator  # noqa: E402

use_course_validator()
