// The official MCP TypeScript SDK (@modelcontextprotocol/sdk) on warden's
// live sandboxes: sandbox_create (cow by default), run_command in the
// sandbox with a file and /tmp persisting across calls, the file tools and
// workspace_diff on the sandbox's view while the host directory stays
// untouched, workspace_discard, a protected path refused, an unknown id a
// tool error, a second MCP client (Streamable HTTP, same server) unable to
// reach the sandbox, the human's unix socket reviewing and applying it,
// sandbox_destroy and --max-sandboxes.  The SDK checks each structuredContent
// against the tool's outputSchema.
//
// Cow workspaces need root: exits 77 without it (1 under WD_MUST_WORK=1).
//
// usage: node mcp_sdk_sessions.cjs SDK_DIR WARDEN WORKSPACE STATE_DIR TOKEN_FILE
'use strict';
const path = require('path');
const fs = require('fs');
const net = require('net');
const { createRequire } = require('module');

const [sdkDir, warden, ws, stateDir, tokenFile] = process.argv.slice(2);
const sdk = createRequire(path.join(sdkDir, 'package.json'));
const { Client } = sdk('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport, getDefaultEnvironment } = sdk(
  '@modelcontextprotocol/sdk/client/stdio.js');
const { StreamableHTTPClientTransport } = sdk(
  '@modelcontextprotocol/sdk/client/streamableHttp.js');

if (process.getuid() !== 0) {
  console.log('# skip: copy-on-write workspaces need root');
  process.exit(process.env.WD_MUST_WORK === '1' ? 1 : 77);
}

let failures = 0;
function ok(cond, what) {
  console.log(`${cond ? 'ok' : 'not ok'} - ${what}`);
  if (!cond) failures++;
}
const text = (r) => (r.content || []).map((c) => c.text || '').join('');
const sleep = (ms) => new Promise((res) => setTimeout(res, ms));
const hostFile = (p) => {
  try { return fs.readFileSync(path.join(ws, p), 'utf8'); } catch (e) { return null; }
};

// The human: a JSON-RPC connection to warden's unix socket that never
// sends initialize.
class Human {
  constructor(sock) {
    this.s = net.createConnection(sock);
    this.buf = '';
    this.waiting = new Map();
    this.next = 1;
    this.s.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const m = JSON.parse(this.buf.slice(0, i));
        this.buf = this.buf.slice(i + 1);
        const w = this.waiting.get(m.id);
        if (w) { this.waiting.delete(m.id); w(m); }
      }
    });
  }
  call(method, params) {
    const id = this.next++;
    return new Promise((res) => {
      this.waiting.set(id, res);
      this.s.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }
  close() { this.s.end(); }
}

async function waitFor(p) {
  for (let i = 0; i < 500 && !fs.existsSync(p); i++) await sleep(10);
}

(async () => {
  fs.chmodSync(stateDir, 0o700); // cow layers live there: warden wants it private
  const sock = path.join(stateDir, 'warden.sock');
  const transport = new StdioClientTransport({
    command: warden,
    args: ['serve', '--stdio', '--socket', sock, '--listen', '127.0.0.1:0', '--token-file',
      tokenFile, '-w', ws, '--max-sandboxes', '2', '--disk', '256M'],
    env: { ...getDefaultEnvironment(), WARDEN_STATE_DIR: stateDir }, stderr: 'pipe' });
  let errText = '';
  transport.stderr.on('data', (d) => { errText += d; });
  const client = new Client({ name: 'warden-sessions', version: '1.0' });
  try {
    await client.connect(transport);
    const call = (name, args) => client.callTool({ name, arguments: args });

    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
    ok(byName.sandbox_create && byName.sandbox_destroy && byName.sandbox_list &&
       byName.workspace_discard && !tools.some((t) => /apply/.test(t.name)),
       'tools/list: the session tools, and no tool to apply');
    ok(byName.run_command.inputSchema.properties.sandbox &&
       byName.workspace_diff.inputSchema.properties.sandbox,
       'run_command and workspace_diff take a sandbox');

    let r = await call('sandbox_create', {});
    const sid = r.structuredContent && r.structuredContent.sandbox;
    ok(!r.isError && r.structuredContent.workspace_mode === 'cow' && text(r).includes(sid) &&
       /human/.test(text(r)), `sandbox_create: a cow sandbox by default (${sid})`);

    r = await call('run_command', { sandbox: sid, command:
      "python3 -c \"open('made.txt','w').write('made\\n'); open('/tmp/keep','w').write('kept')\"" });
    ok(!r.isError && r.structuredContent.status === 0 && r.structuredContent.sandbox_id === sid,
       'run_command in the sandbox writes made.txt and /tmp/keep');
    r = await call('run_command', { sandbox: sid, command:
      "python3 -c \"print(open('made.txt').read() + open('/tmp/keep').read())\"" });
    ok(r.structuredContent.stdout === 'made\nkept\n',
       'a later run_command sees both: the sandbox lasts');
    ok(hostFile('made.txt') === null, 'the host directory has no made.txt');

    r = await call('read_file', { sandbox: sid, path: 'made.txt' });
    ok(!r.isError && text(r) === 'made\n', "read_file reads the sandbox's view");
    r = await call('write_file', { sandbox: sid, path: 'notes.txt', content: 'one\ntwo\n' });
    ok(!r.isError && hostFile('notes.txt') === null, 'write_file in the sandbox, not on the host');
    r = await call('edit_file', { sandbox: sid, path: 'notes.txt', old_string: 'two',
      new_string: 'three' });
    ok(!r.isError, 'edit_file in the sandbox');
    r = await call('list_dir', { sandbox: sid });
    ok(text(r).includes('made.txt') && text(r).includes('notes.txt'), "list_dir: the sandbox's files");
    r = await call('search_files', { sandbox: sid, pattern: 'three' });
    ok(text(r).includes('notes.txt:2: three'), "search_files: the sandbox's files");
    r = await call('write_file', { sandbox: sid, path: '.git/hooks/post-checkout', content: 'x' });
    ok(r.isError && /protected/.test(text(r)), 'a protected path is refused');
    r = await call('workspace_diff', { sandbox: sid });
    const files = (r.structuredContent.files || []).map((f) => `${f.status} ${f.path}`).sort();
    ok(!r.isError && files.join(',') === 'added made.txt,added notes.txt',
       `workspace_diff: the sandbox's change set (${files.join(', ')})`);
    ok(hostFile('made.txt') === null && hostFile('notes.txt') === null,
       'the host directory is untouched');

    r = await call('run_command', { sandbox: 'feedfacefeedface', command: 'ls' });
    ok(r.isError && text(r).includes('feedfacefeedface'), 'an unknown sandbox id: isError naming it');

    // a second MCP client of the same server, over Streamable HTTP
    const port = Number(/listening on http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(errText)[1]);
    const token = fs.readFileSync(tokenFile, 'utf8').trim();
    const other = new Client({ name: 'other', version: '1.0' });
    const ht = new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`),
      { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
    await other.connect(ht);
    r = await other.callTool({ name: 'read_file', arguments: { sandbox: sid, path: 'made.txt' } });
    ok(r.isError && /no sandbox/.test(text(r)), 'another MCP client cannot reach the sandbox');
    r = await other.callTool({ name: 'sandbox_destroy', arguments: { sandbox: sid } });
    ok(r.isError, '... nor destroy it');
    await ht.terminateSession();
    await other.close();

    r = await call('workspace_discard', { sandbox: sid, paths: ['notes.txt'] });
    ok(!r.isError && r.structuredContent.discarded === 1, 'workspace_discard of notes.txt');

    // the human reviews and applies, on the owner's socket
    await waitFor(sock);
    const human = new Human(sock);
    let h = await human.call('sandbox.diff', { sandbox: sid, format: 'names' });
    ok(h.result && /^added +made\.txt \(new file 0[0-7]{3}\)$/.test(h.result.diff.trim()),
       `the human's socket reviews the model's sandbox (${JSON.stringify(h.error || h.result.diff)})`);
    h = await human.call('sandbox.apply', { sandbox: sid });
    ok(h.result && h.result.ok === true && hostFile('made.txt') === 'made\n',
       'the human applies it: the host has made.txt');
    ok(hostFile('notes.txt') === null, '... and not the discarded notes.txt');
    human.close();

    // the cap, then destroy
    r = await call('sandbox_create', { workspace_mode: 'direct' });
    const did = r.structuredContent && r.structuredContent.sandbox;
    ok(!r.isError && r.structuredContent.workspace_mode === 'direct', 'a second, direct sandbox');
    r = await call('sandbox_create', {});
    ok(r.isError && /--max-sandboxes/.test(text(r)), 'a third: refused past --max-sandboxes 2');
    r = await call('sandbox_list', {});
    ok(r.structuredContent.sandboxes.map((x) => x.sandbox).sort().join() === [sid, did].sort().join(),
       'sandbox_list: the two');
    for (const id of [sid, did]) {
      r = await call('sandbox_destroy', { sandbox: id });
      ok(!r.isError && r.structuredContent.destroyed === true, `sandbox_destroy ${id}`);
    }
    r = await call('run_command', { sandbox: sid, command: 'ls' });
    ok(r.isError && text(r).includes(sid), 'a destroyed sandbox: isError');
  } catch (e) {
    ok(false, `unexpected: ${e && e.stack ? e.stack : e}\n# server: ${errText}`);
  }
  await client.close();
  process.exit(failures ? 1 : 0);
})();
