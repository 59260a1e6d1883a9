"""Sign-in, enrolment and step-up services.

Other apps call `authn.services.totp.totp_verify` (which applies the per-user
second-factor lockout: it may raise 429) and
`authn.services.passkeys.passkey_assertion_options` / `passkey_assertion_verify`
for step-up confirmations; `authn.services.challenges` names and spends the
single-use sessions those flows hand out.
"""
