"""Test helpers shared by the suites (sample events, ...). Importable as `support`: pytest puts
`tests/` on sys.path for tests/conftest.py."""
