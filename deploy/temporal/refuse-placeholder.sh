#!/bin/sh
# Sourced by setup-postgres.sh (and run by tests/unit/compose.test.ts): stops the schema step, and
# with it the whole stack, when the database password is a placeholder copied from an example. The
# Temporal cluster and the host's database would otherwise be created with a password anyone can
# read in a public repository. Same markers as src/config/placeholders.ts; the value is never printed.
#   refuse_placeholder VARIABLE_NAME VALUE
refuse_placeholder() {
  lower=$(printf '%s' "$2" | tr '[:upper:]' '[:lower:]')
  case "$lower" in
    change-* | change_* | "change "* | change.* | change:* | change | changeme* | change-me* | change_me* | \
    replace-* | replace_* | replaceme* | your-* | your_* | "<"*">" | \
    secret | password | passwd | example | placeholder | temporal | postgres)
      echo "$1 is a placeholder, not a secret: set it to a random value (openssl rand -hex 32) before the first start" >&2
      return 1
      ;;
  esac
  return 0
}

if [ "${1:-}" != "" ]; then
  refuse_placeholder "$1" "${2:-}"
fi
