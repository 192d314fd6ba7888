#!/usr/bin/env bash
# HOME of a one-shot run: a tmpfs of its own at /home/sandbox, writable,
# bounded, gone with the sandbox; what npm and pip write under ~ (caches,
# logs, the user site) never lands in the workspace, where `warden diff`
# would show it and host tools would read it.
. "$(dirname "$0")/lib.sh"

# Real npm and pip write their logs, caches and user site under ~.
if command -v npm >/dev/null && python3 -m pip --version >/dev/null 2>&1; then
	wd -- /bin/sh -c 'echo "HOME=$HOME"; npm config get cache && python3 -m pip cache dir &&
python3 -m site --user-site && mkdir -p "$(python3 -m site --user-site)" &&
mkdir -p "$(python3 -m pip cache dir)" && echo x >"$HOME/.cache/pip/marker" && ls -A "$HOME/.npm"'
	expect_rc 0 "npm and pip run with HOME in the jail"
	expect_out '^HOME=/home/sandbox$' "HOME is /home/sandbox"
	expect_out '^/home/sandbox/\.npm$' "npm's cache is under it"
	expect_out '^/home/sandbox/\.cache/pip$' "pip's cache is under it"
	expect_out '^/home/sandbox/\.local/lib/python3[^ ]*/site-packages$' "the user site is under it"
	expect_out '^_logs$' "npm wrote its log under ~/.npm"
	leaked=$(cd "$WS" && ls -A | grep -E '^\.(npm|cache|local|npmrc|config)$')
	if [ -z "$leaked" ]; then ok "nothing of ~ landed in the workspace"; else
		not_ok "in the workspace: $leaked"; fi
else
	skip "npm or pip is not installed (scripts/deps.sh installs them)"
fi

wd -- /bin/sh -c 'touch "$HOME/.bashrc" && mkdir -p "$HOME/a/b" && echo ok >"$HOME/a/b/c" && cat "$HOME/a/b/c" && stat -c %U:%a "$HOME"'
expect_rc 0 "HOME is writable"
expect_out '^sandbox:700$' "and the sandbox user's own, mode 700"

# bounded: HOME is a tmpfs as large as /tmp may be (--tmp-size)
wd --tmp-size 2M -- /bin/sh -c 'head -c 8M /dev/zero >"$HOME/big"'
if [ "$RC" != 0 ] && grep -q "No space left" "$ERR"; then ok "--tmp-size bounds HOME (status $RC)"; else
	not_ok "8 MiB into a 2 MiB HOME: status $RC"
	show
fi

# gone with the sandbox: the next run's HOME is empty
wd -- /bin/sh -c 'echo left >"$HOME/left-over"'
wd -- /bin/sh -c 'ls -A "$HOME"'
expect_rc 0 "a second run"
if [ ! -s "$OUT" ]; then ok "its HOME is empty: nothing survived the first sandbox"; else
	not_ok "the second run's HOME holds: $(head -c 200 "$OUT")"; fi
if [ -z "$(ls -A "$WS")" ]; then ok "the workspace is untouched by all of it"; else
	not_ok "the workspace holds: $(ls -A "$WS" | head)"; fi

finish
