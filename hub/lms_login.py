"""Students who arrive from the LMS (LTI 1.3): each launch lands in the Unix account the roster gives that person.

``make hub LTI=lti.json`` (docs/jupyterhub.md). jupyterhub-ltiauthenticator's LTI13Authenticator does the
protocol: the login initiation, the redirect to the platform's authorization URL, and every check of the
id_token the platform posts back (its signature against the platform's JWKS, the issuer, the audience, which
must be our client id, its expiry and age, the nonce and the state). It requires a ``deployment_id`` claim but
reads none: this module adds that the launch comes from one of lti.json's ``deployment_ids`` (the hub's
installations in this course; the same client id may be installed in other courses of the platform). Then
the class's rule: the id the LMS gives the person (the claim ``sub`` unless lti.json's ``user_id_claim`` names another) must be on
the roster, which maps it to the person's Unix account, the same one on every launch. ``tools/hub.py
roster`` records that map from the roster's ``lms_user_id`` column (nbgrader's own column for it; the
settings and the map are read by hub/lms_users.py). A person the roster does not list is refused with a page
that says so: no account is ever made from a launch.
"""

from __future__ import annotations

import grp
from pathlib import Path

from lms_users import not_a_students_account, read_lms_users
from ltiauthenticator.lti13.auth import LTI13Authenticator
from ltiauthenticator.lti13.constants import LTI13_CUSTOM_CLAIM
from ltiauthenticator.lti13.error import InvalidAudienceError, ValidationError
from ltiauthenticator.lti13.handlers import LTI13CallbackHandler
from tornado import web
from traitlets import List, Unicode, default


DEPLOYMENT_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"  # which installation launched
LAUNCH_REFUSED = (
    "The hub could not accept this launch from the LMS: {why}. Open the course's link in the LMS again; if this "
    "page comes back, show it to your instructor, who can have the hub's LTI settings checked."
)


class LaunchHandler(LTI13CallbackHandler):
    """The platform's launch, checked by ltiauthenticator as it is; a refusal also says what to do next.

    Upstream's page says only why (PyJWT's "Signature has expired"); the status codes stay upstream's.
    """

    def decode_and_validate_launch_request(self) -> dict:
        try:
            return super().decode_and_validate_launch_request()
        except InvalidAudienceError as error:  # a token meant for another tool
            raise web.HTTPError(401, LAUNCH_REFUSED.format(why=error), reason="Launch refused") from error
        except ValidationError as error:  # signature, issuer, expiry, age, required claims
            raise web.HTTPError(400, LAUNCH_REFUSED.format(why=error), reason="Launch refused") from error
        except web.HTTPError as error:  # state or nonce: the browser's cookies from the login initiation
            why = error.log_message or error.reason
            raise web.HTTPError(error.status_code, LAUNCH_REFUSED.format(why=why), reason="Launch refused") from error


class RosterLTI13Authenticator(LTI13Authenticator):
    """LTI 1.3 launches, each mapped through the roster to a Unix account of the class, or refused."""

    callback_handler = LaunchHandler

    lms_users = Unicode(config=True, help="The roster's map of LMS user ids to Unix accounts (a CSV).")
    deployment_ids = List(
        Unicode(), config=True, help="The deployment ids of the hub's installations in this course (lti.json)."
    )
    user_id_claim = Unicode("sub", config=True, help="The id_token claim read as the person's LMS user id.")
    instructor = Unicode(config=True, help="The instructor's Unix account.")
    instructor_lms_user_id = Unicode("", config=True, help="The instructor's LMS user id, if they launch too.")
    students_group = Unicode(config=True, help="The Unix group of the class's students.")

    def accounts(self) -> dict[str, str]:
        """Read at every launch: ``make hub-roster`` may add late students while the hub runs.

        The map gives students' accounts only: an entry naming the instructor's account or a system account
        (a map an older ``tools/hub.py`` wrote, or one edited by hand) is left out. The instructor is reached
        by ``instructor_lms_user_id`` alone."""
        accounts = {}
        for lms_user_id, account in read_lms_users(Path(self.lms_users)).items():
            why = not_a_students_account(account, self.instructor)
            if why:
                self.log.warning(
                    "LMS user id %r left out of the map: %s is not a student's account (%s)", lms_user_id, account, why
                )
                continue
            accounts[lms_user_id] = account
        if self.instructor_lms_user_id:
            accounts[self.instructor_lms_user_id] = self.instructor
        return accounts

    def check_deployment(self, id_token: dict) -> None:
        """A launch from another installation of the hub's client id (another course of the platform, whose
        instructor may set its custom claims and roles) is refused: only this course's deployments may launch."""
        deployment = id_token.get(DEPLOYMENT_CLAIM)
        if deployment in self.deployment_ids:
            return
        self.log.warning(
            "LTI launch refused: deployment id %r is not in lti.json's deployment_ids %r (LMS user id %r)",
            deployment,
            list(self.deployment_ids),
            id_token.get("sub"),
        )
        raise web.HTTPError(
            403,
            f"This launch came from the LMS's installation of the hub with deployment id “{deployment}”, which is "
            "not one of this course's, so the hub did not let you in. If you opened the link from this course's "
            "page in the LMS, show this page to your instructor, who can add that deployment id to the hub's "
            "LTI settings.",
            reason="Launch from another course",  # the page's heading; the sentence is its text
        )

    def lms_user_id(self, id_token: dict) -> str:
        """The claim named ``user_id_claim`` (``custom_x`` is ``x`` of the LTI custom claim, as upstream reads it).

        Unlike upstream's username_key, a missing claim is refused rather than replaced by ``sub``: a roster
        keyed by one id must never be searched with another.
        """
        claims, name = id_token, self.user_id_claim
        if name.startswith("custom_"):
            claims, name = id_token.get(LTI13_CUSTOM_CLAIM, {}), name.removeprefix("custom_")
        value = claims.get(name)
        if not isinstance(value, (str, int)) or str(value) == "":
            raise web.HTTPError(
                403,
                f"The LMS sent no user id in the claim “{self.user_id_claim}”, which this hub reads to find "
                "you on the class's roster. Ask your LMS administrator to check the hub's LTI settings.",
                reason="No LMS user id",  # the page's heading; the sentence is its text
            )
        return str(value)

    @default("any_allow_config")
    def _check_allowed_is_the_allow_list(self) -> bool:
        return True  # (no "nobody can log in" warning at start: check_allowed below decides)

    def check_allowed(self, username: str, authentication=None) -> bool:
        """The instructor and the students' group, as with passwords (PAM): the class's accounts, nobody else's."""
        return username == self.instructor or username in grp.getgrnam(self.students_group).gr_mem

    async def authenticate(self, handler, data=None) -> dict:
        """``data`` is the id_token, already verified by LTI13CallbackHandler; the answer is a roster account."""
        self.check_deployment(data or {})
        lms_user_id = self.lms_user_id(data or {})
        account = self.accounts().get(lms_user_id)
        if account is None or not self.check_allowed(account):
            self.log.warning("LTI launch refused: LMS user id %r is not on the roster", lms_user_id)
            raise web.HTTPError(
                403,
                f"You arrived from the LMS as the user with id “{lms_user_id}”, but the class's roster has no "
                "student with that LMS user id, so this hub has no account for you and has not made one. "
                "Ask your instructor to add your LMS user id to the roster.",
                reason="Not on the class roster",  # the page's heading; the sentence is its text
            )
        return {"name": account}
