"""The secrets test corpus (English and Chinese) and ordinary notes that must stay untouched.

Used by tests/test_privacy.py and benchmarks/secrets_fp.py. The fake credentials are built from
pieces so that secret scanners run over this repository do not flag the file itself; none of
them was ever valid.
"""

from __future__ import annotations

_B62 = "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6"


def _fake(prefix: str, n: int, alphabet: str = _B62) -> str:
    return prefix + (alphabet * 4)[:n]


OPENAI_OLD = _fake("s" + "k-", 48)
OPENAI_PROJ = _fake("s" + "k-proj-", 100)
ANTHROPIC = _fake("s" + "k-ant-api03-", 93) + "AA"
GITHUB_CLASSIC = _fake("gh" + "p_", 36)
GITHUB_FINE = _fake("github" + "_pat_", 22) + "_" + _fake("", 59)
GITHUB_APP = _fake("gh" + "s_", 36)
AWS_KEY_ID = "AK" + "IA" + "IOSFODNN7EXAMPL3"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
SLACK_BOT = "xo" + "xb-" + "1234567890123-1234567890123-" + _fake("", 24)
SLACK_HOOK = "https://hooks.slack" + ".com/services/T00000000/B00000000/" + _fake("", 24)
GOOGLE = "AI" + "za" + _fake("", 35)
STRIPE = "sk" + "_live_" + _fake("", 24)
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi4r0tTB0Yz8v5Ykgn3wxJ8pW1Q\n"
    "-----END RSA PRIVATE KEY-----"
)
SLACK_APP = "xa" + "pp-1-A0123456789-1234567890123-" + "0123456789abcdef" * 4
NPM = _fake("np" + "m_", 36)
AZURE_KEY = _fake("", 86, _B62 + "+/") + "=="
AZURE_CLIENT = "xY7" + "8Q~" + _fake("", 30) + "~a_b"
#: A client secret in the older format (no ``Q~``): found by its "client secret" context.
AZURE_CLIENT_OLD = "Kd8~" + _fake("", 30) + ".x-9~Zq"
GCP_KEY_ID = ("0123456789abcdef" * 3)[:40]
GCP_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"
GCP_PEM = "-----BEGIN " + "PRIVATE KEY-----\\n" + GCP_BODY + "\\n-----END PRIVATE KEY-----\\n"
GOOGLE_OAUTH = "GOC" + "SPX-" + _fake("", 28)
DB_URL_PASSWORD = "Xk9@2024!"

#: The secrets that issue 27's probe found kept under the default ``redact``:
#: ``(text, the secret that must not survive, kind)``.
ROUND2: list[tuple[str, str, str]] = [
    (f"the AWS secret is {AWS_SECRET}", AWS_SECRET, "AWS secret access key"),
    (
        f"Access key ID,Secret access key\n{AWS_KEY_ID},{AWS_SECRET}",
        AWS_SECRET,
        "AWS secret access key",
    ),
    (
        "the billing secret access key is 8f3kD92jsLq0Pz7XvB4nM1cR5tY6uW2e",
        "8f3kD92jsLq0Pz7XvB4nM1cR5tY6uW2e",
        "secret key",
    ),
    ("secret key: 7Hq2Lm9Xw4Rt8Kp3Zs6Vb1Nc", "7Hq2Lm9Xw4Rt8Kp3Zs6Vb1Nc", "secret key"),
    ("the api secret Qw3rTy8uIo2pAs5dFg7hJk9l", "Qw3rTy8uIo2pAs5dFg7hJk9l", "secret key"),
    ("数据库密码是：Xk9#2024pass", "Xk9#2024pass", "password"),
    ("数据库的密码Lp7$Qz3wRt", "Lp7$Qz3wRt", "password"),
    ("密码 Mn4%Vb8nXc 别外传", "Mn4%Vb8nXc", "password"),
    ("VPN 口令是 Gh5^Jk2mPq", "Gh5^Jk2mPq", "password"),
    ("测试服务器的秘钥是 Ab3dEf9hJk2L", "Ab3dEf9hJk2L", "secret key"),
    ("对象存储的密钥是：Zx8-Cv2Bn6Mq4", "Zx8-Cv2Bn6Mq4", "secret key"),
    (f"socket mode uses {SLACK_APP}", SLACK_APP, "Slack token"),
    (
        f"orders live at postgresql://admin:{DB_URL_PASSWORD}@db.internal:5432/app",
        DB_URL_PASSWORD,
        "password in a URL",
    ),
    ("wifi pass: 'hunter2-Blue!'", "hunter2-Blue!", "password"),
    ("the guest wifi password 'Blue-Whale-77' is on the card", "Blue-Whale-77", "password"),
    ("the NAS password is 'correct horse 42 battery'", "horse 42 battery", "password"),
    (f"AccountKey={AZURE_KEY}", AZURE_KEY, "Azure access key"),
    (
        "DefaultEndpointsProtocol=https;AccountName=acmelogs;"
        f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
        AZURE_KEY,
        "Azure access key",
    ),
    (f"the app registration's secret: {AZURE_CLIENT}", AZURE_CLIENT, "Azure client secret"),
    (f"Azure AD client secret {AZURE_CLIENT_OLD}", AZURE_CLIENT_OLD, "secret key"),
    (f"publish with {NPM}", NPM, "npm token"),
    (f'"private_key_id": "{GCP_KEY_ID}",', GCP_KEY_ID, "GCP private key id"),
    (f'"private_key": "{GCP_PEM}",', GCP_BODY, "private key"),
    (f"OAuth client secret {GOOGLE_OAUTH}", GOOGLE_OAUTH, "Google OAuth secret"),
    (f"deploy key:\n{PEM}\nkeep it safe", PEM.splitlines()[1], "private key"),
]

_LETTERS = "aBcDeFgHiJkLmNoPqRsTuVwXyZ"
HUGGING_FACE = _fake("h" + "f_", 34, _LETTERS)
DIGITALOCEAN = "do" + "p_v1_" + "0123456789abcdef" * 4
RANDOM_TOKEN = "q7Rt2XbL9mZk4WvY8nPd3sHf"

#: The four formats issue 35's probe found kept by ``memdir remember``, the PreCompact capture
#: and the session archive, and the general rules (a keyword near a value, a random-looking
#: string): ``(text, the secret that must not survive, kind)``.
ROUND3: list[tuple[str, str, str]] = [
    (f"the Hugging Face token is {HUGGING_FACE}", HUGGING_FACE, "Hugging Face token"),
    (f"push models with {HUGGING_FACE} from the CI box", HUGGING_FACE, "Hugging Face token"),
    (f"DigitalOcean API: {DIGITALOCEAN}", DIGITALOCEAN, "DigitalOcean token"),
    (f"doctl auth init -t {DIGITALOCEAN}", DIGITALOCEAN, "DigitalOcean token"),
    ("the pw is Tr0ub4dor-77", "Tr0ub4dor-77", "password"),
    ("NAS pw: kiwi-Gate-42", "kiwi-Gate-42", "password"),
    ("login/pass: admin / Xk9#2024q", "Xk9#2024q", "password"),
    ("router user/pass admin/hunter2Blue", "hunter2Blue", "password"),
    ("login: admin, pass: s3cr3t-Fox", "s3cr3t-Fox", "password"),
    # A keyword near a value, with no "is" or ":" between.
    ("wifi password hunter2Blue for the guests", "hunter2Blue", "password"),
    ("the db pw for staging Xk9#2024q", "Xk9#2024q", "password"),
    ("the deploy token for staging gH7kL9mQ2xR4tV8wZ1pB", "gH7kL9mQ2xR4tV8wZ1pB", "secret key"),
    # A random-looking string with no keyword at all.
    (f"remember this one: {RANDOM_TOKEN}", RANDOM_TOKEN, "high-entropy string"),
]

#: ``(text, the secret that must not survive, kind)``.
SECRETS: list[tuple[str, str, str]] = [
    (f"Use the key {OPENAI_OLD} for the batch job", OPENAI_OLD[3:], "OpenAI API key"),
    (f"OPENAI_API_KEY={OPENAI_PROJ}", OPENAI_PROJ[8:], "OpenAI API key"),
    (f"our Claude key: {ANTHROPIC}", ANTHROPIC, "Anthropic API key"),
    (f"Remember my GitHub token is {GITHUB_CLASSIC}", GITHUB_CLASSIC, "GitHub token"),
    (f"CI uses {GITHUB_FINE} to push tags", GITHUB_FINE, "GitHub token"),
    (f"the app token {GITHUB_APP} expires hourly", GITHUB_APP, "GitHub token"),
    (f"AWS key id {AWS_KEY_ID} for the backup bucket", AWS_KEY_ID, "AWS access key id"),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "AWS secret access key"),
    (f"the Slack bot token is {SLACK_BOT}", SLACK_BOT, "Slack token"),
    (f"post alerts to {SLACK_HOOK}", SLACK_HOOK, "Slack webhook"),
    (f"maps key {GOOGLE}", GOOGLE, "Google API key"),
    (f"billing uses {STRIPE}", STRIPE, "Stripe key"),
    (f"session cookie {JWT}", JWT, "JSON web token"),
    (f"deploy key:\n{PEM}\nkeep it safe", "MIIEpAIBAAKCAQEA3Tz2mr7SZ", "private key"),
    ("db is postgres://app:S3cr3t-pw@db.internal:5432/app", "S3cr3t-pw", "password in a URL"),
    ("redis at redis://:hunter22@10.0.0.5:6379/0", "hunter22", "password in a URL"),
    ("Remember: my password is hunter2-Secret!", "hunter2-Secret", "password"),
    ("the wifi password is CorrectHorse42", "CorrectHorse42", "password"),
    ("Password: Tr0ub4dor&3", "Tr0ub4dor&3", "password"),
    ("the PIN for the door is 4711", "4711", "password"),
    ("my password for the NAS is 'blue-whale-77'", "blue-whale-77", "password"),
    (
        "the api key is 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0",
        "secret key",
    ),
    (
        "Authorization: Bearer abcDEF123456ghiJKL789012mno",
        "abcDEF123456ghiJKL789012",
        "bearer token",
    ),
    ("我的密码是abc12345，别忘了", "abc12345", "password"),
    ("记住：服务器密码是 Qwe!2026zx", "Qwe!2026zx", "password"),
    ("路由器的登录密码为 admin8888", "admin8888", "password"),
    ("支付密码：135790", "135790", "password"),
    ("测试环境的密钥是 4f3c2a1b9d8e7f6a5b4c3d2e", "4f3c2a1b9d8e7f6a5b4c3d2e", "secret key"),
    (f"记住我的 GitHub 令牌：{GITHUB_CLASSIC}", GITHUB_CLASSIC, "GitHub token"),
    ("数据库连接串 mysql://root:Pa55word@127.0.0.1/shop", "Pa55word", "password in a URL"),
    *ROUND2,
    *ROUND3,
    # Found while fixing round 2: "is" / "was" was read before "is now" / "was changed to".
    ("the wifi password is now Blue-Whale-77", "Blue-Whale-77", "password"),
    ("password was changed to Hunter-2024", "Hunter-2024", "password"),
]

#: Ordinary notes (hashes, URLs, ports, versions, sentences about passwords) that must stay.
NORMAL: list[str] = [
    "The staging database listens on port 5433",
    "The password is required for every login, and it is wrong three times a week",
    "Reset the password in the admin panel, then rotate the token",
    "The token is valid for 24 hours",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39 fixed the cache bug",
    "sha256 of the release: 9b74c9897bac770ffc029102a200c5de0e1d7bd0ef4b1a1e2f6a8c0d3b5e7f91",
    "The docs are at https://docs.python.org/3/library/sqlite3.html#sqlite3.connect",
    "Clone with git clone https://github.com/example/project.git",
    "Use sk-learn? No: it is scikit-learn, imported as sklearn",
    "UUID of the tenant: 123e4567-e89b-12d3-a456-426614174000",
    "Run pytest -m torture for the long suite",
    "the secret to good bread is a long proof",
    "postgres://localhost:5432/app has no password; PGPASSWORD comes from the environment",
    'Set url = "env:MEMDIR_INDEX_URL" instead of a literal password',
    "The password manager is 1Password; the vault is called Work",
    "Password: see 1Password, item 'NAS admin'",
    "Base64 of hello world is aGVsbG8gd29ybGQ=",
    "Version 2.14.0 shipped on 2026-11-28 with 1,204 tests",
    "密码是什么？我忘了",
    "密码错误三次会锁定账户",
    "修改密码需要先验证手机号",
    "令牌是每小时刷新一次的",
    "我们决定用 Redis 做分布式锁，端口 6380",
    "以后部署都放在周二进行",
    "The API key is stored in the OPENAI_API_KEY environment variable",
    "Our token budget is 8,000 tokens per batch",
    "Password is too short: at least 12 characters",
    "The passphrase is in the safe",
    # Near misses of the round-2 detectors (issue 27).
    "密码忘了，明天去重置",
    "改密码要先登录再验证",
    "数据库的密码要定期更换",
    "密码学是研究加密的学科，RSA2048 是一种算法",
    "密码用 SHA256 加密后保存",
    "密钥是什么时候过期的？",
    "令牌桶算法限制每秒 100 个请求",
    "口令忘记了找管理员",
    "My boarding pass: seat 12B, gate 5",
    "The secret access key is stored in Vault, not in the repo",
    "The api secret rotation runs on the first Monday",
    "Remember the secret: practice daily, rest on Sundays",
    "the wifi password 'on the fridge' is what she wrote",
    "The form asks for the password 'twice' to confirm it",
    "AccountKey=<your key> goes in the connection string",
    "npm_config_cache points at ~/.npm",
    "private_key_id is one of the fields of the JSON key file",
    "Clone with ssh://git@example.com:2222/team/repo.git",
    "Profile at https://example.com/@alice, mail alice@example.com",
    "Our client secret expires on 2026-12-01; rotate it before then",
    "A PEM key starts with -----BEGIN PRIVATE KEY----- and ends with its END line",
    "the admin password: ******** (masked in the screenshot)",
    # Near misses of the round-3 rules (issue 35).
    "login at 10:30 tomorrow, then the pw deadline is Friday",
    "token limit for claude-3-5-sonnet-20241022 is 200k",
    "Use paraphrase-multilingual-MiniLM-L12-v2 for Chinese notes",
    "class Base64HighEntropyString flags quoted strings",
    "commit 9657cf2a1b3c4d5e6f708192a3b4c5d6e7f80912 is on main",
    "Login with GitHub, then pass the review to Sam",
    "the login page is at /admin/login",
    "PIN code changes every 90 days",
    "user/pass is on the sticky note in the drawer",
    "hf_hub_download and hf_transfer speed up model downloads",
    "do_v1_migration ran on 2026-11-30",
    "the secret sauce is 50% mayo",
    # Lines of code pasted into a note.
    'url += f"?token={token}"',
    "tiktoken = _tiktoken()",
    "if parts.password is None:",
]


def kept_parts(secret: str, text: str) -> list[str]:
    """The pieces of ``secret`` still in ``text``: each run of 5 characters (8 for a secret of
    16 or more; the whole secret when shorter), so that a secret redacted only in part (the
    half of a password before an ``@``) is caught, not only one kept whole."""
    size = min(len(secret), 5 if len(secret) < 16 else 8)
    pieces = {secret[i : i + size] for i in range(len(secret) - size + 1)}
    return sorted(piece for piece in pieces if piece in text)
