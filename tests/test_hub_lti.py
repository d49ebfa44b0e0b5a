"""Students arrive from the LMS: `make hub LTI=lti.json`, with the test playing the LMS platform (LTI 1.3).

The platform is this test: its own RSA key, its public keys (a JWKS) served on 127.0.0.1, and the two steps of
an LTI 1.3 launch a browser carries between a platform and a tool: the login initiation (the hub answers with
a redirect to the platform's authorization URL, carrying a state and a nonce), then the platform's signed
id_token posted to the hub's callback. The hub (tests/hub_class.py: real Unix accounts, `make hub-roster`
with an lms_user_id column, `make hub` as root) must land a student of the roster in their own server, run
as their own uid, the same account at every launch; and refuse a token signed with another key, an expired
one, one for another audience (another client id), and an LMS user the roster does not list.

Each refusal is a good launch with one thing changed (``launch``'s arguments): the test of the good launch
shows the rest of the token is accepted. Making Unix accounts needs root: CI runs as root and fails here
without it; elsewhere the test is skipped.
"""

from __future__ import annotations

import base64
import grp
import hashlib
import hmac
import html
import json
import pwd
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from course import REPO
from hub_class import HubClass, Person, running_hub_class

sys.path.insert(0, str(REPO / "hub"))  # the hub's own modules, as tools/hub.py and its configuration import them
from lms_users import SettingsError, merge_lms_users, read_lms_users, read_settings, write_lms_users

LTI_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
LOGIN_COOKIE = "jupyterhub-hub-login"  # the hub's cookie of a logged-in person


class Platform:
    """The LMS as the test plays it: an issuer with an RSA key, its JWKS on 127.0.0.1, the id_tokens it signs."""

    issuer = "https://lms.example.test"  # an identifier, never fetched
    client_id = "10000000000042"  # what the platform calls the hub
    key_id = "platform-key-1"
    deployment_id = "1:course-heads-and-masks"  # the hub's installation in this course

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        keys = json.dumps({"keys": [{**public, "kid": self.key_id, "use": "sig", "alg": "RS256"}]}).encode()

        class Keys(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200 if self.path == "/jwks" else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(keys if self.path == "/jwks" else b"{}")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def settings(self) -> dict:
        """lti.json: what the LMS administrator gives back to the hub (docs/jupyterhub.md)."""
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "authorize_url": f"{self.url}/authorize",
            "jwks_url": f"{self.url}/jwks",
            "deployment_ids": [self.deployment_id],
        }

    def id_token(
        self, lms_user_id: str, nonce: str, target: str, key=None, audience=None, age=0, changes=None, forge=None
    ) -> str:
        """A resource-link launch of ``lms_user_id``, signed with the platform's key unless ``key`` is another.

        ``changes``: claims replaced (None: left out). ``forge``: "none" (unsigned, ``alg: none``) or "hs256"
        (HMAC-SHA256 keyed with the platform's public key in PEM, the classic confusion of algorithms)."""
        now = int(time.time()) - age
        claims = {
            "iss": self.issuer,
            "aud": audience or self.client_id,
            "sub": lms_user_id,
            "iat": now,
            "exp": now + 300,
            "nonce": nonce,
            LTI_CLAIM + "version": "1.3.0",
            LTI_CLAIM + "message_type": "LtiResourceLinkRequest",
            LTI_CLAIM + "deployment_id": self.deployment_id,
            LTI_CLAIM + "target_link_uri": target,
            LTI_CLAIM + "resource_link": {"id": "heads-and-masks-link"},
            LTI_CLAIM + "roles": ["http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"],
            LTI_CLAIM + "context": {"id": "course-1", "label": "HM101"},
        }
        claims = {name: value for name, value in {**claims, **(changes or {})}.items() if value is not None}
        if forge == "none":
            return jwt.encode(claims, None, algorithm="none", headers={"kid": self.key_id})
        if forge == "hs256":  # by hand: PyJWT itself refuses a PEM public key as an HMAC secret
            public = self.key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
            parts = [
                base64.urlsafe_b64encode(json.dumps(part).encode()).rstrip(b"=")
                for part in ({"alg": "HS256", "typ": "JWT", "kid": self.key_id}, claims)
            ]
            signature = hmac.new(public, b".".join(parts), hashlib.sha256).digest()
            return b".".join([*parts, base64.urlsafe_b64encode(signature).rstrip(b"=")]).decode()
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.key_id})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def platform():
    lms = Platform()
    yield lms
    lms.close()


@pytest.fixture(scope="module")
def hub_class(platform):
    with running_hub_class(students=2, lti=platform.settings()) as hub:
        yield hub


def launch(hub: HubClass, platform: Platform, lms_user_id: str, **token) -> tuple[requests.Session, requests.Response]:
    """One LTI launch in a fresh browser session: the hub's answer to the id_token the platform posts back.

    ``token`` changes the id_token (``key``, ``audience``, ``age``), as ``Platform.id_token`` takes them.
    """
    browser = requests.Session()
    target = f"{hub.url}/hub/"
    # 1. The platform sends the browser to the hub's login initiation URL, which sends it on to the platform
    initiation = browser.post(
        f"{hub.url}/hub/lti13/oauth_login",
        data={"iss": platform.issuer, "login_hint": lms_user_id, "target_link_uri": target},
        allow_redirects=False,
        timeout=30,
    )
    assert initiation.status_code == 302, initiation.text
    authorize = urlsplit(initiation.headers["Location"])
    assert f"{authorize.scheme}://{authorize.netloc}{authorize.path}" == f"{platform.url}/authorize"
    request = {name: values[0] for name, values in parse_qs(authorize.query).items()}
    assert request["redirect_uri"] == f"{hub.url}/hub/lti13/oauth_callback"
    assert request["response_type"] == "id_token" and request["response_mode"] == "form_post"
    # 2. The platform (here: without asking who the browser is) posts its signed id_token back to the hub
    id_token = platform.id_token(lms_user_id, request["nonce"], target, **token)
    answer = browser.post(
        request["redirect_uri"],
        data={"id_token": id_token, "state": request["state"]},
        allow_redirects=False,
        timeout=30,
    )
    return browser, answer


def open_lab(hub: HubClass, browser: requests.Session, answer: requests.Response, person: Person) -> requests.Response:
    """``person``'s JupyterLab, reached as a browser would: the launch's redirect (the hub starts the server),
    then the lab (through the hub's OAuth) once the server runs."""
    assert answer.status_code == 302, f"the launch was refused ({answer.status_code}): {answer.text}"
    assert LOGIN_COOKIE in browser.cookies, "the hub did not log the browser in"
    browser.get(urljoin(hub.url, answer.headers["Location"]), timeout=60)
    lab = f"{hub.url}/user/{person.name}/lab"
    deadline = time.monotonic() + 45
    while True:
        page = browser.get(lab, timeout=30)  # a pending spawn answers with the hub's progress page
        if page.status_code == 200 and page.url == lab:
            return page
        assert time.monotonic() < deadline, f"{person.name}'s lab did not open: {page.status_code} {page.url}"
        time.sleep(0.5)


def assert_refused(hub: HubClass, browser: requests.Session, answer: requests.Response, status: int, why: str):
    assert answer.status_code == status, f"expected {status}, the hub answered {answer.status_code}: {answer.text}"
    page = html.unescape(answer.content.decode())  # UTF-8, as the page's meta element says
    assert why in page, f"the page does not say {why!r}:\n{page[-2000:]}"
    if status != 403:  # a launch the platform may simply repeat: the page says what to do next
        assert "Open the course's link in the LMS again" in page, page[-2000:]
    assert LOGIN_COOKIE not in browser.cookies, "the hub logged the browser in"


def test_a_student_of_the_roster_lands_in_their_own_server(hub_class, platform):
    student, other = hub_class.roster
    browser, answer = launch(hub_class, platform, student.lms_user_id)
    page = open_lab(hub_class, browser, answer, student)
    assert "JupyterLab" in page.text
    assert hub_class.servers().get(student.name), "no server runs for the student"
    assert set(hub_class.servers()[student.name]) == {student.account.pw_uid}, "the server is not run as the student"
    assert other.name not in hub_class.servers()

    # every launch of the same LMS user lands in the same account and server
    again, answer = launch(hub_class, platform, student.lms_user_id)
    open_lab(hub_class, again, answer, student)
    assert set(hub_class.servers()) == {student.name}


def test_a_token_signed_with_another_key_is_refused(hub_class, platform):
    forger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    browser, answer = launch(hub_class, platform, hub_class.roster[1].lms_user_id, key=forger)
    assert_refused(hub_class, browser, answer, 400, "Signature verification failed")


def test_an_expired_token_is_refused(hub_class, platform):
    browser, answer = launch(hub_class, platform, hub_class.roster[1].lms_user_id, age=3600)
    assert_refused(hub_class, browser, answer, 400, "Signature has expired")


def test_a_token_for_another_audience_is_refused(hub_class, platform):
    browser, answer = launch(hub_class, platform, hub_class.roster[1].lms_user_id, audience="another-tool")
    assert_refused(hub_class, browser, answer, 401, "Audience doesn't match")


@pytest.mark.parametrize(
    ("token", "status", "why"),
    [
        ({"forge": "none"}, 400, "The specified alg value is not allowed"),
        ({"forge": "hs256"}, 400, "The specified alg value is not allowed"),
        ({"changes": {"nonce": None}}, 400, "could not accept this launch"),
        ({"changes": {"nonce": "0" * 64}}, 400, "OAuth nonce mismatch"),
        ({"changes": {"iss": "https://another-lms.example.test"}}, 400, "Invalid issuer"),
    ],
    ids=["alg-none", "hs256-with-the-public-key", "no-nonce", "another-nonce", "another-issuer"],
)
def test_a_forged_or_unbound_token_is_refused(hub_class, platform, token, status, why):
    """Red team, second round: tokens a student can make without the platform's key, or one not bound to this
    browser's login initiation."""
    browser, answer = launch(hub_class, platform, hub_class.roster[1].lms_user_id, **token)
    assert_refused(hub_class, browser, answer, status, why)
    assert hub_class.roster[1].name not in hub_class.servers()


def test_a_launch_from_another_deployment_is_refused(hub_class, platform):
    """Red team: the same client id installed in another course of the platform, whose instructor chooses its
    custom parameters; its launches carry another deployment_id, signed by the same platform key."""
    student = hub_class.roster[1]
    another = {LTI_CLAIM + "deployment_id": "2:another-course"}
    browser, answer = launch(hub_class, platform, student.lms_user_id, changes=another)
    assert_refused(hub_class, browser, answer, 403, "deployment id “2:another-course”, which is not one of this course")
    assert "Launch from another course" in answer.text  # as its heading
    assert student.name not in hub_class.servers()
    assert "deployment id '2:another-course' is not in lti.json's deployment_ids" in hub_class.log.read_text()


def test_a_token_replayed_from_another_browser_is_refused(hub_class, platform):
    """Red team: a launch's id_token and state (what the form posts) replayed from another browser, within the
    token's life: the state and nonce are in the first browser's cookies (signed by the hub), not in the form."""
    student = hub_class.roster[1]
    posted = {}
    original = requests.Session.post

    def recording(session, url, data=None, **kwargs):
        if url.endswith("/oauth_callback"):
            posted.update(data)
        return original(session, url, data=data, **kwargs)

    requests.Session.post = recording
    try:
        browser, answer = launch(hub_class, platform, student.lms_user_id)
    finally:
        requests.Session.post = original
    assert answer.status_code == 302, answer.text  # the original launch is good
    thief = requests.Session()
    replayed = thief.post(f"{hub_class.url}/hub/lti13/oauth_callback", data=posted, allow_redirects=False, timeout=30)
    assert_refused(hub_class, thief, replayed, 400, "OAuth state missing from cookies")


@pytest.mark.parametrize(
    "lms_user_id",
    [lambda s: s.upper(), lambda s: f" {s}", lambda s: f"{s}\u200b", lambda s: "../" + s, lambda s: s * 400],
    ids=["upper-case", "leading-space", "zero-width-space", "dot-dot", "very-long"],
)
def test_an_lms_user_id_near_a_students_is_not_theirs(hub_class, platform, lms_user_id):
    """Red team: ids the roster does not hold exactly, however close to a student's: refused, no account made."""
    accounts = {account.pw_name for account in pwd.getpwall()}
    browser, answer = launch(hub_class, platform, lms_user_id(hub_class.roster[1].lms_user_id))
    assert_refused(hub_class, browser, answer, 403, "the class's roster has no student with that LMS user id")
    assert {account.pw_name for account in pwd.getpwall()} == accounts, "a Unix account was made"


def test_the_lms_instructor_role_gives_no_instructor_rights(hub_class, platform):
    """Red team: a student's launch carrying the LMS's Instructor and Administrator roles (a student who teaches
    another course, or a platform's bug) lands in the student's own server; the hub has no admin page for them."""
    student = hub_class.roster[0]
    roles = [
        "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
        "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator",
    ]
    browser, answer = launch(hub_class, platform, student.lms_user_id, changes={LTI_CLAIM + "roles": roles})
    open_lab(hub_class, browser, answer, student)
    assert browser.get(f"{hub_class.url}/hub/admin", allow_redirects=False, timeout=30).status_code == 403
    assert hub_class.instructor.name not in hub_class.servers()


def test_an_lms_user_not_on_the_roster_is_refused_and_given_no_account(hub_class, platform):
    stranger = f"lms-{uuid.uuid4().hex[:16]}"
    accounts = {account.pw_name for account in pwd.getpwall()}
    browser, answer = launch(hub_class, platform, stranger)
    assert_refused(hub_class, browser, answer, 403, "the class's roster has no student with that LMS user id")
    assert f"“{stranger}”" in answer.content.decode()  # the page says which LMS id it received
    assert "Not on the class roster" in answer.text  # as its heading
    assert {account.pw_name for account in pwd.getpwall()} == accounts, "a Unix account was made"
    assert hub_class.roster[1].name not in hub_class.servers()


def test_an_lms_user_id_is_never_moved_to_another_account():
    first = merge_lms_users({}, [{"id": "ada", "lms_user_id": "42"}, {"id": "bob", "lms_user_id": ""}])
    assert first == {"42": "ada"}  # bob has no LMS id: he is not in the map
    assert merge_lms_users(first, [{"id": "ada", "lms_user_id": "43"}]) == {"43": "ada"}  # ada's id changed
    for roster in (
        [{"id": "bob", "lms_user_id": "42"}],
        [{"id": "cy", "lms_user_id": "7"}, {"id": "di", "lms_user_id": "7"}],
    ):
        with pytest.raises(SettingsError, match="already belongs to"):
            merge_lms_users(first, roster)


def test_lti_settings_say_what_is_missing_or_unknown(tmp_path):
    settings = {
        "issuer": "https://lms.example.test",
        "client_id": "10000000000042",
        "authorize_url": "https://lms.example.test/authorize",
        "jwks_url": "https://lms.example.test/jwks",
        "deployment_ids": ["1:course-heads-and-masks"],
    }
    path = tmp_path / "lti.json"
    path.write_text(json.dumps(settings))
    assert read_settings(path) == settings
    for claim in ("sub", "custom_canvas_user_id"):  # the platform's id, and a custom parameter it substitutes
        path.write_text(json.dumps({**settings, "user_id_claim": claim}))
        assert read_settings(path)["user_id_claim"] == claim
    for changed, complaint in [
        ({"jwks_url": ""}, "missing: jwks_url"),
        ({"jwks": "https://lms.example.test/jwks"}, "unknown LTI settings jwks;"),
        ({"client_id": 10000000000042}, "must be strings: client_id"),
        ({"deployment_ids": []}, "missing: deployment_ids"),
        ({"deployment_ids": "1:course-heads-and-masks"}, "deployment_ids must be a list"),
        ({"deployment_ids": ["1:course-heads-and-masks", ""]}, "deployment_ids must be a list"),
        ({"jwks_url": "http://lms.example.test/jwks"}, "jwks_url must be https://"),
        # red team: a claim the person edits in their LMS profile would let them name a classmate
        ({"user_id_claim": "email"}, "user_id_claim 'email' cannot name a person"),
        ({"user_id_claim": "name"}, "user_id_claim 'name' cannot name a person"),
        ({"user_id_claim": "custom_"}, "user_id_claim 'custom_' cannot name a person"),
    ]:
        path.write_text(json.dumps({**settings, **changed}))
        with pytest.raises(SettingsError, match=complaint):
            read_settings(path)


def test_the_gradebook_holds_each_students_lms_user_id(hub_class):
    """The roster's lms_user_id column is nbgrader's own: the instructor's gradebook records it too."""
    listing = hub_class.as_person(
        hub_class.instructor,
        ["sh", "-c", f"cd {hub_class.course / 'autograde'} && {hub_class.env / 'bin' / 'nbgrader'} db student list"],
        capture_output=True,
        text=True,
    )
    assert listing.returncode == 0, listing.stdout + listing.stderr
    # nbgrader's lines: "id (last_name, first_name) -- email, lms_user_id"
    students = {line.split(" ")[0]: line for line in listing.stdout.splitlines() if " -- " in line}
    for student in hub_class.roster:
        assert students[student.name].endswith(f", {student.lms_user_id}"), listing.stdout


def test_a_roster_cannot_hand_an_lms_user_the_instructors_or_a_system_account(hub_class, platform):
    """Red team: the roster's ids are LMS logins, and an existing Unix account of that name was joined to the class
    (usermod), its LMS id mapped to it. A row naming the instructor's account, or a system account (root, daemon,
    postgres: a uid below the login range), let that LMS user into it: the instructor's server (course,
    gradebook, solutions), or a server run as postgres (the shared gradebook's superuser, by peer login).
    ``make hub-roster`` must refuse such a roster whole, and the hub must refuse a launch into such an account
    even from a map an earlier roster wrote."""
    system = f"hmy{hub_class.suffix}"  # a system account (useradd --system: a uid below UID_MIN), as postgres is
    home = hub_class.folder / system
    subprocess.run(["useradd", "--system", "--create-home", "--home-dir", str(home), system], check=True)
    try:
        hostile = {hub_class.instructor.name: f"lms-{uuid.uuid4().hex[:12]}", system: f"lms-{uuid.uuid4().hex[:12]}"}
        roster = hub_class.folder / "hostile-roster.csv"
        roster.write_text(
            "id,first_name,last_name,email,lms_user_id\n"
            + "".join(f"{name},Mallory,Hostile,,{lms_user_id}\n" for name, lms_user_id in hostile.items())
        )
        made = hub_class.make(
            "hub-roster",
            f"INSTRUCTOR={hub_class.instructor.name}",
            f"STUDENTS={hub_class.group}",
            f"ROSTER={roster}",
            f"PASSWORDS={hub_class.folder / 'hostile-passwords.csv'}",
            f"HUB_STATE={hub_class.folder / 'state'}",
            capture_output=True,
            text=True,
        )
        for lms_user_id in hostile.values():
            browser, answer = launch(hub_class, platform, lms_user_id)
            assert_refused(hub_class, browser, answer, 403, "the class's roster has no student with that LMS user id")
        assert made.returncode != 0, f"make hub-roster accepted the instructor's and a system account:\n{made.stdout}"
        said = made.stdout + made.stderr
        assert "the instructor's account" in said and "a system account" in said, said
        assert hub_class.instructor.name not in grp.getgrnam(hub_class.group).gr_mem, "the instructor joined the class"
        assert system not in grp.getgrnam(hub_class.group).gr_mem, "the system account joined the class"

        # a map written before this check (an earlier roster), and the account in the students' group: still refused
        state_map = hub_class.folder / "state" / "lms_users.csv"
        before = state_map.read_bytes()
        write_lms_users(state_map, {**read_lms_users(state_map), **{v: k for k, v in hostile.items()}})
        for name in hostile:
            subprocess.run(["usermod", "--append", "--groups", hub_class.group, name], check=True)
        try:
            for lms_user_id in hostile.values():
                browser, answer = launch(hub_class, platform, lms_user_id)
                assert_refused(
                    hub_class, browser, answer, 403, "the class's roster has no student with that LMS user id"
                )
        finally:
            state_map.write_bytes(before)
            for name in hostile:
                subprocess.run(["gpasswd", "--delete", name, hub_class.group], capture_output=True)
        assert hub_class.instructor.name not in hub_class.servers(), "an LMS user entered the instructor's server"
    finally:
        for name in (hub_class.instructor.name, system):
            subprocess.run(["gpasswd", "--delete", name, hub_class.group], capture_output=True)
        subprocess.run(["userdel", "--remove", system], capture_output=True)
