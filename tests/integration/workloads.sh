#!/usr/bin/env bash
# Ordinary work still works in the jail: the filter and the fences must not
# break what an agent's commands do (threads, processes, multiprocessing
# with /dev/shm semaphores, pipes, TLS trust store, sqlite in the
# workspace, name lookups of the sandbox user, a compiler, git, tar).
. "$(dirname "$0")/lib.sh"
require_root
require_userns

wd -- /usr/bin/python3 -c '
import multiprocessing as mp, threading, subprocess, tempfile, os, socket, ssl, sqlite3, pwd
def sq(x): return x * x
with mp.Pool(2) as p: print("pool", sum(p.map(sq, range(10))))
t = threading.Thread(target=lambda: None); t.start(); t.join(); print("thread ok")
print("sub", subprocess.run(["sh", "-c", "echo sub | tr a-z A-Z"], capture_output=True, text=True).stdout.strip())
with tempfile.NamedTemporaryFile() as f: print("tmpfile ok")
a, b = socket.socketpair(); a.send(b"x"); print("socketpair", b.recv(1).decode())
print("certs", ssl.create_default_context().cert_store_stats()["x509_ca"] > 0)
db = sqlite3.connect("/workspace/t.db"); db.execute("create table t(x)"); db.commit(); print("sqlite ok")
print("user", pwd.getpwuid(os.getuid()).pw_name, os.path.expanduser("~"))
'
expect_rc 0 "python3 with multiprocessing, threads, subprocess, sqlite"
for want in "pool 285" "thread ok" "sub SUB" "tmpfile ok" "socketpair x" "certs True" "sqlite ok" "user sandbox /home/sandbox"; do
	check "python3: $want" grep -qx "$want" "$OUT"
done

wd -- /bin/sh -c 'seq 1 1000 | sort -rn | head -n1 | tr 0-9 a-j; ls /usr/bin | wc -l | awk "{ exit !(\$1 > 10) }" && echo listing ok'
check "a shell pipeline" grep -qx 'baaa' "$OUT"
check "/usr/bin is listable" grep -qx 'listing ok' "$OUT"

if command -v cc >/dev/null; then
	printf 'int main(void) { return 7; }\n' >"$WS/t.c"
	wd -- /bin/sh -c 'cc -o t t.c && ./t'
	expect_rc 7 "cc builds and runs a program in the workspace"
fi
if command -v git >/dev/null; then
	wd -- /bin/sh -c 'git init -q repo && cd repo && echo a > f && git add f &&
		git -c user.name=w -c user.email=w@example.invalid commit -q -m first && git log --oneline | wc -l'
	expect_rc 0 "git init, add, commit in the workspace"
	check "git: one commit" grep -qx 1 "$OUT"
fi
wd -- /bin/sh -c 'tar czf /tmp/x.tgz -C /workspace . && tar tzf /tmp/x.tgz | wc -l'
expect_rc 0 "tar into /tmp"

finish
