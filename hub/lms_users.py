"""The LMS's settings (lti.json) and the roster's map of LMS user ids to Unix accounts (``lms_users.csv``).

Plain Python, shared by ``tools/hub.py`` (which checks lti.json before the hub starts and writes the map from
a roster's ``lms_user_id`` column) and by the hub's LTI authenticator (hub/lms_login.py, which reads both).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import pwd
from pathlib import Path
from urllib.parse import urlsplit

# lti.json: what the LMS administrator gives back after registering the hub (docs/jupyterhub.md)
REQUIRED_SETTINGS = {
    "issuer": "the platform's issuer, e.g. https://canvas.instructure.com",
    "client_id": "the client id the platform gave the hub when it was registered",
    "authorize_url": "the platform's OIDC authorization URL, e.g. https://moodle.example.edu/mod/lti/auth.php",
    "jwks_url": "the platform's public keys (JWKS), e.g. https://moodle.example.edu/mod/lti/certs.php",
    "deployment_ids": "a list of the deployment ids the platform gave the hub's installations in this course",
}
OPTIONAL_SETTINGS = {
    "user_id_claim": "the id_token claim that identifies a person (default sub)",
    "instructor_lms_user_id": "the instructor's own LMS user id, if they too arrive from the LMS",
}
FIELDS = ["lms_user_id", "account"]  # lms_users.csv, one line per person
LOGIN_DEFS = Path("/etc/login.defs")  # where useradd reads the uids it gives people (UID_MIN, UID_MAX)


class SettingsError(Exception):
    """An lti.json or a roster the hub cannot use; the message says what to change."""


def read_settings(path: Path) -> dict:
    """lti.json, checked: every required setting present and a non-empty string, nothing unknown."""
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SettingsError(f"{path}: not a JSON file the hub can read ({error}).") from None
    if not isinstance(settings, dict):
        raise SettingsError(f"{path}: expected a JSON object of settings, found {type(settings).__name__}.")
    missing = [f"{name} ({meaning})" for name, meaning in REQUIRED_SETTINGS.items() if not settings.get(name)]
    if missing:
        raise SettingsError(f"{path}: these LTI settings are missing: {'; '.join(missing)}.")
    unknown = sorted(set(settings) - set(REQUIRED_SETTINGS) - set(OPTIONAL_SETTINGS))
    if unknown:
        known = ", ".join([*REQUIRED_SETTINGS, *OPTIONAL_SETTINGS])
        raise SettingsError(f"{path}: unknown LTI settings {', '.join(unknown)}; the known ones are {known}.")
    not_text = [name for name, value in settings.items() if name != "deployment_ids" and not isinstance(value, str)]
    if not_text:
        raise SettingsError(f"{path}: these settings must be strings: {', '.join(not_text)}.")
    # one client id may be installed in many courses (deployments) of the platform; only this course's may launch
    deployments = settings["deployment_ids"]
    if not isinstance(deployments, list) or not all(isinstance(one, str) and one for one in deployments):
        raise SettingsError(
            f"{path}: deployment_ids must be a list of deployment ids, each a non-empty string, such as "
            f'["1:course-heads-and-masks"]; found {json.dumps(deployments)}.'
        )
    # who a launch is: the platform's own id for the person, or a custom claim; never a claim the person may
    # edit in their LMS profile (email, name, given_name...), which would let them take a classmate's
    claim = settings.get("user_id_claim", "sub")
    if claim != "sub" and not (claim.startswith("custom_") and len(claim) > len("custom_")):
        raise SettingsError(
            f"{path}: user_id_claim {claim!r} cannot name a person: use sub (the platform's id for them) or "
            "custom_NAME (a custom parameter the platform substitutes); a claim such as email or name may be "
            "changed by the person in their LMS profile."
        )
    # the keys that decide who a launch is must not be replaceable on the way: HTTPS, or this machine itself
    in_clear = [name for name in ("authorize_url", "jwks_url") if not secure(settings[name])]
    if in_clear:
        raise SettingsError(
            f"{path}: {', '.join(in_clear)} must be https:// addresses (plain http only on 127.0.0.1): "
            "the platform's keys fetched in clear could be replaced on the network by anyone's."
        )
    return settings


def secure(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in ("127.0.0.1", "localhost", "::1"))


def read_lms_users(path: Path) -> dict[str, str]:
    """{LMS user id: Unix account}, as rosters recorded it (empty before any roster had the column)."""
    if not path.exists():
        return {}
    with open(path, newline="", encoding="utf-8") as table:
        return {row["lms_user_id"]: row["account"] for row in csv.DictReader(table)}


def people_uids(login_defs: Path = LOGIN_DEFS) -> range:
    """The uids useradd gives people (UID_MIN to UID_MAX, 1000 to 60000 unless the machine says otherwise).

    Below them are root and the system's own accounts (daemon, www-data, postgres: the gradebook's superuser
    by peer login), above them nobody; none of them is a student's.
    """
    bounds = {"UID_MIN": 1000, "UID_MAX": 60000}
    with contextlib.suppress(OSError):
        for line in login_defs.read_text().splitlines():
            words = line.split()
            if len(words) == 2 and words[0] in bounds and words[1].isdigit():
                bounds[words[0]] = int(words[1])
    return range(bounds["UID_MIN"], bounds["UID_MAX"] + 1)


def not_a_students_account(name: str, instructor: str) -> str:
    """Why the Unix account ``name`` may not be a student's, or "" if it may (also when it does not exist yet:
    useradd will give it a person's uid). A roster's ids are the LMS's logins, which the course does not choose:
    one may name the instructor's account or the system's, and the LMS user with that row would enter it."""
    if name == instructor:
        return "it is the instructor's account"
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return ""
    if uid not in people_uids():
        return f"it is a system account (uid {uid}), not a person's"
    return ""


def merge_lms_users(accounts: dict[str, str], rows: list[dict[str, str]]) -> dict[str, str]:
    """``accounts`` with a roster's ``lms_user_id`` column added (each row's ``id`` is its Unix account).

    A person whose LMS id changed keeps one entry, the new one. An LMS id already given to one account is never
    moved to another, by this roster or an earlier one: that would let one LMS user into another person's
    account. A row with no LMS id leaves that person as they were.
    """
    merged = dict(accounts)
    for row in rows:
        name, lms_user_id = row["id"], (row.get("lms_user_id") or "").strip()
        if not lms_user_id:
            continue
        owner = merged.get(lms_user_id, name)
        if owner != name:
            raise SettingsError(
                f"The LMS user id {lms_user_id!r} of {name} already belongs to {owner}: one LMS user, one account."
            )
        merged = {key: account for key, account in merged.items() if account != name}
        merged[lms_user_id] = name
    return merged


def write_lms_users(path: Path, accounts: dict[str, str]) -> None:
    """The map, root's alone (0600): who may enter which account."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)

    def private(name: str, flags: int) -> int:
        return os.open(name, flags, 0o600)

    with open(path.with_suffix(".new"), "w", newline="", encoding="utf-8", opener=private) as table:
        writer = csv.writer(table)
        writer.writerow(FIELDS)
        writer.writerows(sorted(accounts.items()))
    path.with_suffix(".new").replace(path)  # a launch reading it meanwhile sees the old map or the new one
