"""What makes text memdir did not write itself safe to keep and to show
(docs/design.md#memory-is-data).

- :mod:`~memdir.safety.privacy`: secrets in what memdir writes on its own, redacted, refused or
  left (``[privacy] secrets``); its detectors in :mod:`~memdir.safety.secret_detectors`.
- :mod:`~memdir.safety.untrusted`: memory text as data, the one escaping rule for it in a prompt.
- :mod:`~memdir.safety.injection`: the check for text that reads like a prompt injection; its
  patterns by language in :mod:`~memdir.safety.injection_patterns`.
"""
