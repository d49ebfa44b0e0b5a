# nbgrader for a student of the course's JupyterHub (hub/jupyterhub_config.py puts this folder on
# JUPYTER_CONFIG_PATH): the Assignments tab fetches from and submits to the class's exchange.
import os

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)
c.CourseDirectory.course_id = "heads-and-masks"
c.Exchange.root = os.environ["HEADS_AND_MASKS_EXCHANGE"]
# The failures Validate shows are cut at this width; the course's messages are one line each.
c.Validator.width = 130
