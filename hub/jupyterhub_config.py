# The course's JupyterHub for a class on one machine (make hub; docs/jupyterhub.md). tools/hub.py sets up
# what it needs and starts JupyterHub with this file, as root, with these variables:
#   HUB_INSTRUCTOR  the instructor's Unix account: their server holds the course, gradebook and grading
#   HUB_STUDENTS    the Unix group of the students (tools/hub.py roster puts the roster's students in it)
#   HUB_EXCHANGE    nbgrader's exchange folder          HUB_COURSE  the instructor's course folder
#   HUB_STATE       the hub's database and cookie secret (root's alone)
#   HUB_PORT        where the hub listens, on 127.0.0.1 (HUB_API_PORT, HUB_PROXY_API_PORT: its two internal ports)
#   HUB_PROXY       configurable-http-proxy, installed from hub/package-lock.json by npm ci
#   HUB_LTI         (if set) the LMS's settings, lti.json: students arrive from the LMS (LTI 1.3), not by password
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by JupyterHub when it reads this file)

HERE = Path(__file__).resolve().parent
ENV = Path(sys.prefix)  # the course's environment, the one that runs JupyterHub: every server uses it as it is
INSTRUCTOR = os.environ["HUB_INSTRUCTOR"]
STUDENTS = os.environ["HUB_STUDENTS"]
STATE = Path(os.environ["HUB_STATE"])
LOOPBACK = "127.0.0.1"

# Who may log in: the instructor and the students' group, with their Unix passwords (PAM). The hub is no
# user's but root's: the passwords are checked by the system, each server is started as its person.
c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_users = {INSTRUCTOR}
c.PAMAuthenticator.allowed_groups = {STUDENTS}
c.PAMAuthenticator.admin_users = set()  # nobody manages others' servers through the hub

# Or, with make hub LTI=lti.json: the same people arrive from the LMS (LTI 1.3, hub/lms_login.py), each mapped
# by the roster's lms_user_id to their Unix account; nobody else, and no account is made for anybody.
if os.environ.get("HUB_LTI"):
    sys.path.insert(0, str(HERE))
    from lms_login import RosterLTI13Authenticator
    from lms_users import read_settings

    lti = read_settings(Path(os.environ["HUB_LTI"]))
    c.JupyterHub.authenticator_class = RosterLTI13Authenticator
    c.RosterLTI13Authenticator.issuer = lti["issuer"]
    c.RosterLTI13Authenticator.client_id = {lti["client_id"]}
    c.RosterLTI13Authenticator.authorize_url = lti["authorize_url"]
    c.RosterLTI13Authenticator.jwks_endpoint = lti["jwks_url"]
    c.RosterLTI13Authenticator.deployment_ids = lti["deployment_ids"]
    c.RosterLTI13Authenticator.user_id_claim = lti.get("user_id_claim", "sub")
    c.RosterLTI13Authenticator.instructor = INSTRUCTOR
    c.RosterLTI13Authenticator.instructor_lms_user_id = lti.get("instructor_lms_user_id", "")
    c.RosterLTI13Authenticator.students_group = STUDENTS
    c.RosterLTI13Authenticator.lms_users = str(STATE / "lms_users.csv")
    c.RosterLTI13Authenticator.admin_users = set()

c.JupyterHub.bind_url = f"http://{LOOPBACK}:{os.environ.get('HUB_PORT', '8000')}"
c.JupyterHub.hub_ip = LOOPBACK
c.JupyterHub.hub_port = int(os.environ.get("HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://{LOOPBACK}:{os.environ.get('HUB_PROXY_API_PORT', '8001')}"
c.ConfigurableHTTPProxy.command = [os.environ.get("HUB_PROXY", str(HERE / "node_modules/.bin/configurable-http-proxy"))]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.log_level = "WARN"

# Each person's server: JupyterLab in their home, run as their own uid (LocalProcessSpawner), on loopback.
c.JupyterHub.spawner_class = "localprocess"
c.Spawner.cmd = [str(ENV / "bin" / "jupyterhub-singleuser")]
c.Spawner.ip = LOOPBACK
c.Spawner.notebook_dir = "~"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120


def server_environment(spawner) -> None:
    """What a student's or the instructor's server reads: its nbgrader tools and configuration.

    JUPYTER_CONFIG_PATH comes before the environment's and the user's own configuration. A student's
    (hub/config/student) turns off the formgrader, the course list and Create Assignment and keeps the
    Assignments tab and Validate; the instructor's (hub/config/instructor) keeps every tool and reads the
    course's nbgrader_config.py. Hiding is for clarity, not protection: a student's formgrader would run
    as the student and reach only what the student reaches (docs/jupyterhub.md).
    """
    instructor = spawner.user.name == INSTRUCTOR
    environment = {
        "PATH": f"{ENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "HEADS_AND_MASKS_ENV": str(ENV),  # the Makefile uses it as it is (it is root's: nothing to install)
        "HEADS_AND_MASKS_EXCHANGE": os.environ["HUB_EXCHANGE"],
        "JUPYTER_CONFIG_PATH": str(HERE / "config" / ("instructor" if instructor else "student")),
        "LANG": "C.UTF-8",
    }
    if instructor:
        course = os.environ["HUB_COURSE"]
        environment.update(
            HEADS_AND_MASKS_COURSE=course,
            EXCHANGE=os.environ["HUB_EXCHANGE"],  # make release/grade/feedback's exchange (Makefile)
            # the formgrader's MathJax from this server, as make instructor-lab has it
            JUPYTER_PATH=str(Path(course) / "tools" / "instructor_lab_data"),
        )
    spawner.environment = {**spawner.environment, **environment}


c.Spawner.pre_spawn_hook = server_environment
