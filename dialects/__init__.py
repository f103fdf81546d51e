"""Declarative engine profiles (one TOML file per engine), shipped as ``verifiedsql.dialects``."""
