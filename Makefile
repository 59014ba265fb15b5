# Shortcuts for the two commands and the linters. Everything runs from .venv (scripts/ create it).
.PHONY: run test lint fmt

run:  ## serve the site with all the shipped data on http://127.0.0.1:8000 (PORT=… to change)
	scripts/serve

test:  ## the whole suite on SQLite and PostgreSQL, plus ruff and the migrations check (as CI)
	scripts/test

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

fmt:
	.venv/bin/ruff format .
	.venv/bin/ruff check --fix .
