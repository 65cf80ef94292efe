"""Test doubles: a fake Hugging Face Hub and a mock OpenAI-compatible server (127.0.0.1 only).

They live with the tests, not in the package: no install and no Hugging Face Job carries them.
"""
