"""Masking keeps code readable: a secret's value is masked, a reference to one is not.

An approver judges the code an agent sends. ``API_KEY = os.environ["API_KEY"]``
holds no secret, and masking it as ``API_KEY = ********"API_KEY"]`` showed
code nobody wrote; a literal in the same place, in any of the languages
agents write, must still be masked.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tapgate.policy.masking import MASK, mask_arguments, mask_text

SECRET = "hunt" + "er2-" + "x9Q"  # assembled, so no scanner mistakes this file for a leak


@pytest.mark.parametrize(
    "code",
    [
        'API_KEY = os.environ["API_KEY"]',
        'token = os.getenv("TOKEN")',
        'password = os.environ.get("DB_PASSWORD")',
        "client = OpenAI(api_key=settings.OPENAI_API_KEY)",
        "password = config.password",
        "self.token = token_from(request)",
        "const apiKey = process.env.API_KEY;",
        "fetch(url, {headers: {Authorization: process.env.TOKEN}})",
        "export API_TOKEN=${TOKEN}",
        'curl -H "Authorization: Bearer $TOKEN" https://api.example.com',
        "api_key = ENV['X']",
        'password = ENV.fetch("DB_PASSWORD")',
        ':password => ENV["DB_PASSWORD"]',
        'token := os.Getenv("TOKEN")',
        'let token = std::env::var("TOKEN")?;',
        'password: "{{ vault_db_password }}"',
        "password: {{ .Values.db.password }}",
        "token: ${{ secrets.GITHUB_TOKEN }}",
        'headers = {"Authorization": f"Bearer {token}"}',
        'auth_token = "#{token}"',
    ],
)
def test_a_reference_to_a_secret_is_shown_as_written(code: str) -> None:
    assert mask_text(code) == code
    assert mask_arguments({"content": code}) == {"content": code}


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        (f'API_KEY = "{SECRET}"', f'API_KEY = "{MASK}"'),
        (f"password = f'{SECRET}'", f"password = f'{MASK}'"),
        (f'token := "{SECRET}"', f'token := "{MASK}"'),  # Go
        (f':password => "{SECRET}"', f':password => "{MASK}"'),  # Ruby
        (f"'password' => '{SECRET}'", f"'password' => '{MASK}'"),  # PHP
        (f"const apiKey = '{SECRET}';", f"const apiKey = '{MASK}';"),
        (f"export API_TOKEN={SECRET}", f"export API_TOKEN={MASK}"),
        (f"password: {SECRET}", f"password: {MASK}"),
        (f"Authorization: Bearer {SECRET}", f"Authorization: Bearer {MASK}"),
    ],
)
def test_a_literal_secret_is_still_masked(code: str, shown: str) -> None:
    assert mask_text(code) == shown


# -- properties over code in several languages ------------------------------------------------

NAMES = st.sampled_from(
    ["API_KEY", "api_key", "apiKey", "GITHUB_TOKEN", "authToken", "db_password", "client_secret"]
)
VARIABLES = st.from_regex(r"[A-Z][A-Z_]{0,15}", fullmatch=True)
"""Environment variable names (no digits: a generated secret always has one)."""

REFERENCES = [
    # Python
    '{name} = os.environ["{var}"]',
    '{name} = os.getenv("{var}")',
    "{name} = settings.{name}",
    "client = Client({name}=config.{name})",
    # JavaScript / TypeScript
    "const {name} = process.env.{var};",
    'const {name} = process.env["{var}"];',
    "const headers = {{ {name}: config.{name} }};",
    # shell
    'export {name}="${{{var}}}"',
    "{name}=${var} ./deploy.sh",
    '{name}="$(vault kv get -field=value secret/{var})" ./run',
    # Ruby
    "{name} = ENV['{var}']",
    '{name} = ENV.fetch("{var}")',
    ':{name} => ENV["{var}"]',
    # Go
    '{name} := os.Getenv("{var}")',
    # YAML (compose, Actions, Ansible)
    "{name}: ${{{var}}}",
    "{name}: ${{{{ secrets.{var} }}}}",
    '{name}: "{{{{ {var} }}}}"',
]

LITERALS = [
    # Python
    '{name} = "{secret}"',
    "{name} = '{secret}'",
    'connect({name}="{secret}")',
    # JavaScript / TypeScript
    "const {name} = '{secret}';",
    'const config = {{ {name}: "{secret}" }};',
    # shell
    "export {name}={secret}",
    '{name}="{secret}" ./deploy.sh',
    "deploy --{name} {secret}",
    # Ruby
    "{name} = '{secret}'",
    ':{name} => "{secret}"',
    # Go
    '{name} := "{secret}"',
    # YAML
    "{name}: {secret}",
    '{name}: "{secret}"',
]

SECRETS = st.from_regex(
    r"[A-Za-z0-9][A-Za-z0-9_\-!%+@^*~]{4,30}[0-9][A-Za-z0-9]{2}", fullmatch=True
)
"""Literal secrets: no quote, space, ``$``, brace or dot (a bare ``a.password`` reads as
code), and always a digit, so a secret never appears in the code around it."""


@given(template=st.sampled_from(REFERENCES), name=NAMES, var=VARIABLES)
def test_code_that_refers_to_a_secret_is_never_rewritten(
    template: str, name: str, var: str
) -> None:
    code = template.format(name=name, var=var)
    assert mask_text(code) == code


@given(template=st.sampled_from(LITERALS), name=NAMES, secret=SECRETS)
def test_a_literal_secret_in_code_never_reaches_an_approver(
    template: str, name: str, secret: str
) -> None:
    code = template.format(name=name, secret=secret)
    masked = mask_text(code)
    assert secret not in masked
    assert MASK in masked
    assert name in masked  # the code around the secret stays readable


@given(
    reference=st.sampled_from(REFERENCES),
    literal=st.sampled_from(LITERALS),
    name=NAMES,
    var=VARIABLES,
    secret=SECRETS,
)
def test_a_file_mixing_both_masks_the_literal_and_keeps_the_reference(
    reference: str, literal: str, name: str, var: str, secret: str
) -> None:
    lookup = reference.format(name=name, var=var)
    content = f"{lookup}\n{literal.format(name=name, secret=secret)}\n"
    masked = mask_arguments({"file_path": "settings.py", "content": content})["content"]
    assert secret not in masked
    assert masked.startswith(f"{lookup}\n")
