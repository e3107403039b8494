"""The credential shapes a security review found in clear, and the per-tool meaning of ``-p``.

Each shape was found in clear by an independent check (or by a review of
common CLI tools) before ``tapgate.policy.secret_shapes`` knew it. Values are
assembled so that no scanner mistakes this file for a leak.
"""

from __future__ import annotations

import pytest

from tapgate.policy.masking import MASK, clean, clean_name, is_secret_key, mask_arguments, mask_text

PW = "MyP4ss" + "w0rd"
BODY = "abcdefghij" + "KLMNOPQRST" + "0123456789"


@pytest.mark.parametrize(
    ("text", "secret", "shown"),
    [
        (f"mysql -u root -p{PW} -e 'select 1'", PW, "-p******** -e 'select 1'"),
        (f"mysqldump -uroot -p{PW} shop | gzip", PW, "-p******** shop | gzip"),
        (f"/usr/bin/mariadb -p'{PW} x' shop", PW, "-p'********' shop"),
        (f"mysqladmin -p{PW} status", PW, "-p********"),
        (f"DB_PASS={PW} ./migrate", PW, "DB_PASS=********"),
        (f"export SMTP_PASS={PW}", PW, "SMTP_PASS=********"),
        (f"MYSQL_PWD={PW} mysql", PW, "MYSQL_PWD=********"),
        (f"SSHPASS={PW} sshpass -e ssh h", PW, "SSHPASS=********"),
        (f"redis-cli --pass {PW}", PW, "--pass ********"),
        (f"glpat-{BODY[:20]}", BODY[:20], "glpat-****"),
        (f"gldt-{BODY}", BODY, "gldt-****"),
        (f"npm_{BODY}{BODY[:6]}", BODY, "npm_****"),
        (
            f"curl -d x https://hooks.slack.com/services/T0A1/B0B2/{BODY}",
            BODY,
            "https://hooks.slack.com/services/****",
        ),
        (f"https://discord.com/api/webhooks/123/{BODY}", BODY, "discord.com/api/webhooks/****"),
        (f"sshpass -p {PW} ssh -p 22 db", PW, "sshpass -p ******** ssh -p 22 db"),
        (f"redis-cli -h r -a {PW} ping", PW, "-a ******** ping"),
        (f"mongosh -u root -p {PW} --host db", PW, "-p ******** --host db"),
        (f"ldapsearch -x -D cn=admin -w {PW} -b dc=x", PW, "-w ******** -b"),
        (f"sqlcmd -S db -U sa -P {PW} -Q x", PW, "-P ******** -Q x"),
        (f"docker login -u me -p {PW} ghcr.io", PW, "-p ******** ghcr.io"),
        (f"zip -P {PW} a.zip f && 7z a -p{PW} b.7z f", PW, "7z a -p******** b.7z"),
        (f"smbclient //srv/share -U admin%{PW}", PW, "-U admin%********"),
        (f"openssl rsa -in k -passin pass:{PW}", PW, "-passin pass:********"),
        (f"curl --proxy-user bob:{PW} x", PW, "--proxy-user bob:********"),
        (f"SG.{BODY[:22]}.{BODY}{BODY[:13]}", BODY, "SG.****"),
        (f"hf_{BODY}{BODY[:4]}", BODY, "hf_****"),
        (f"pypi-AgEIcHlwaS5vcmc{BODY}{BODY}", BODY, "pypi-****"),
        (f"VAULT_ADDR=x vault read -address x hvs.{BODY}", BODY, "hvs.****"),
        (f"whsec_{BODY}", BODY, "whsec_****"),
        (f"GOCSPX-{BODY}", BODY, "GOCSPX-****"),
        (f"xoxe.xoxp-1-{BODY}", BODY, "xoxe.xoxp-****"),
        (f"note=_ghp_{BODY}", BODY, "_ghp_****"),  # glued after an underscore: still the token
        (f"CI_npm_{BODY}{BODY[:6]}", BODY, "CI_npm_****"),
        (f"key_sk_live_{BODY}", BODY, "key_sk_live_****"),
    ],
)
def test_the_reviewed_credential_shapes_are_masked(text: str, secret: str, shown: str) -> None:
    masked = mask_text(text)
    assert secret not in masked
    assert shown in masked


@pytest.mark.parametrize(
    "text",
    [
        "mysql -p shop",  # -p alone prompts; "shop" is the database
        "mysql -h db -P 3306 -u app shop",  # -P is the port
        "psql -p 5432 -h db -U app",  # PostgreSQL: -p is the port
        "ssh -p 22 host && scp -P 2222 f host:",  # OpenSSH: a port
        "docker run -p 8080:80 nginx",  # publish a port; only "docker login -p" is a password
        "sqlcmd -S db -p",  # lowercase -p prints statistics
        "mongosh -u root -p --host db",  # a bare -p prompts
        "cat /etc/mysql/my.cnf -pfoo",  # a path, not the mysql command
        "COMPASS=north BYPASS_CACHE=1 SSH_ASKPASS=/usr/bin/ksshaskpass x",
        "pytest --passes 3 -p no:cacheprovider",
        "def f():\n    pass\n",
    ],
)
def test_the_same_letters_elsewhere_are_left_alone(text: str) -> None:
    assert mask_text(text) == text


@pytest.mark.parametrize(
    "text",
    [
        'mysql -p"$DB_PASSWORD" shop',
        "mysql -p$(cat /run/secrets/db) shop",
        "sshpass -p `cat pw` ssh h",
        "DB_PASS=$SECRET ./run",
    ],
)
def test_code_that_runs_is_never_masked(text: str) -> None:
    assert mask_text(text) == text


def test_a_url_keeps_its_host_when_its_password_is_masked() -> None:
    assert mask_text("git clone https://oauth2:tok3n@gitlab.com/x") == (
        f"git clone https://oauth2:{MASK}@gitlab.com/x"
    )
    assert mask_text("redis-cli -u redis://:pw@cache:6379") == (
        f"redis-cli -u redis://:{MASK}@cache:6379"
    )


@pytest.mark.parametrize("key", ["DB_PASS", "smtp_pass", "pass", "SSHPASS", "mysql_pwd"])
def test_pass_names_are_secret_keys(key: str) -> None:
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["bypass", "compass", "ssh_askpass", "passes", "passthrough"])
def test_names_that_only_contain_pass_are_not(key: str) -> None:
    assert not is_secret_key(key)


@pytest.mark.parametrize(
    "text",
    [
        "deploy",
        "ghp_" + "a" * 36,
        "TOKEN=hunter2 run\u202e",
        "x" * 300 + " password: hunter2",  # past the cached length: cleaned afresh
    ],
)
def test_cached_names_are_cleaned_as_any_text(text: str) -> None:
    """Names a batch's calls share are cleaned once (a batch card's cost, docs/benchmarks.md), to
    the same text."""
    assert clean_name(text) == clean_name(text) == clean(text)
    arguments = {text: "v", "run": 1}
    assert mask_arguments(arguments) == mask_arguments(arguments)
    assert next(iter(mask_arguments(arguments))) == mask_text(text)
