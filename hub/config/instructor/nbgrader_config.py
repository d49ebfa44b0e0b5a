# nbgrader for the instructor on the course's JupyterHub (hub/jupyterhub_config.py puts this folder on
# JUPYTER_CONFIG_PATH): the formgrader works on the course in the instructor's home, its gradebook and layout.
import os

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)
load_subconfig(os.path.join(os.environ["HEADS_AND_MASKS_COURSE"], "autograde", "nbgrader_config.py"))  # noqa: F821
c.Exchange.root = os.environ["HEADS_AND_MASKS_EXCHANGE"]
