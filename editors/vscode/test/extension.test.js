// The client: which command it starts and how, with `vscode` and the language client stubbed
// (neither runs outside VS Code); the server itself is tested in the Python suite.
"use strict";

const test = require("node:test");
const assert = require("node:assert/strict");
const Module = require("node:module");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** A workspace folder on disk: `files` maps relative paths to their text. */
function folderWith(files) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "promptc-ext-"));
  made.push(root);
  for (const [rel, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  }
  return root;
}

const made = [];
test.after(() => made.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true })));

const PROMPTC_PROJECT = { "pyproject.toml": '[tool.promptc]\nsrc = "prompts_src"\n', "prompts_src/a.prompt": "Hi.\n" };

/** A stub of the `vscode` module's parts the extension uses, over a real folder. */
function loadExtension({ settings = {}, folder = folderWith(PROMPTC_PROJECT), documents = [], languages = ["prompt"] } = {}) {
  const created = [];
  const registered = [];
  const changedLanguage = [];
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { id, name, serverOptions, clientOptions, started: 0, stopped: 0 });
      created.push(this);
    }
    async start() { this.started += 1; }
    async stop() { this.stopped += 1; }
  }
  class RelativePattern {
    constructor(base, pattern) { Object.assign(this, { baseUri: base, pattern }); }
  }
  const Uri = { file: (fsPath) => ({ scheme: "file", fsPath }) };
  const listeners = [];
  const opened = [];
  const walk = (dir) => fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(path.join(dir, entry.name)) : [path.join(dir, entry.name)]);
  const vscode = {
    Uri,
    RelativePattern,
    workspace: {
      workspaceFolders: folder ? [{ uri: { fsPath: folder } }] : undefined,
      textDocuments: documents,
      getConfiguration: (section) => ({ get: (key) => settings[`${section}.${key}`] }),
      createFileSystemWatcher: (glob) => ({ glob, onDidCreate: () => ({}), onDidChange: () => ({}), onDidDelete: () => ({}), dispose() {} }),
      onDidChangeConfiguration: (listener) => (listeners.push(listener), { dispose() {} }),
      onDidOpenTextDocument: (listener) => (opened.push(listener), { dispose() {} }),
      findFiles: async (glob) => {
        assert.equal(glob, "**/pyproject.toml");
        return folder && fs.existsSync(folder) ? walk(folder).filter((f) => path.basename(f) === "pyproject.toml").map(Uri.file) : [];
      },
    },
    languages: {
      getLanguages: async () => languages,
      setTextDocumentLanguage: async (document, id) => {
        changedLanguage.push([document.uri.fsPath, id]);
        document.languageId = id;
        return document;
      },
    },
    commands: { registerCommand: (name, fn) => (registered.push([name, fn]), { dispose() {} }) },
    window: { showErrorMessage: () => undefined },
  };
  const stubs = { vscode, "vscode-languageclient/node": { LanguageClient, TransportKind: { stdio: 0 } } };
  const original = Module._load;
  Module._load = function (request, ...rest) {
    return Object.hasOwn(stubs, request) ? stubs[request] : original.call(this, request, ...rest);
  };
  const file = path.join(__dirname, "..", "extension.js");
  delete require.cache[file];
  try {
    return { extension: require(file), created, registered, listeners, opened, changedLanguage, folder };
  } finally {
    Module._load = original;
  }
}

/** A text document as VS Code hands it to the extension. */
function documentAt(fsPath, text, languageId = "prompt") {
  return { uri: { scheme: "file", fsPath }, languageId, getText: () => text };
}

test("the server is `promptc lsp` over stdio for the prompt files of the project", async () => {
  const { extension, created, folder } = loadExtension();
  const context = { subscriptions: [] };
  await extension.activate(context);
  assert.equal(created.length, 1);
  const [client] = created;
  assert.equal(client.serverOptions.run.command, "promptc");
  assert.deepEqual(client.serverOptions.run.args, ["lsp"]);
  assert.equal(client.serverOptions.run.transport, 0);
  assert.deepEqual(client.serverOptions.run.options, { cwd: folder });
  assert.deepEqual(JSON.parse(JSON.stringify(client.clientOptions.documentSelector)), [
    { language: "prompt", scheme: "file", pattern: { baseUri: { scheme: "file", fsPath: folder }, pattern: "**/*.prompt" } },
  ]);
  assert.equal(client.started, 1);
});

test("promptc.path and promptc.args are used, with ${workspaceFolder} replaced", async () => {
  const { extension, created, folder } = loadExtension({
    settings: { "promptc.path": "${workspaceFolder}/tools/promptc", "promptc.args": ["--verbose"] },
  });
  await extension.activate({ subscriptions: [] });
  assert.equal(created[0].serverOptions.run.command, `${folder}/tools/promptc`);
  assert.deepEqual(created[0].serverOptions.run.args, ["lsp", "--verbose"]);
});

test("without promptc.path the workspace's .venv wins over PATH", () => {
  const { extension } = loadExtension();
  const seen = [];
  const exists = (p) => (seen.push(p), true);
  assert.deepEqual(extension.serverCommand({}, "/w", "linux", exists), { command: "/w/.venv/bin/promptc", args: ["lsp"] });
  assert.equal(extension.serverCommand({}, "C:\\w", "win32", () => true).command, path.join("C:\\w", ".venv", "Scripts", "promptc.exe"));
  assert.deepEqual(extension.serverCommand({}, "/w", "linux", () => false), { command: "promptc", args: ["lsp"] });
  assert.deepEqual(extension.serverCommand({ path: "  " }, undefined), { command: "promptc", args: ["lsp"] });
});

test("a settings change and the restart command restart the server", async () => {
  const { extension, created, registered, listeners } = loadExtension();
  await extension.activate({ subscriptions: [] });
  await listeners[0]({ affectsConfiguration: (s) => s === "editor" });
  assert.equal(created.length, 1, "an unrelated setting leaves the server alone");
  await listeners[0]({ affectsConfiguration: (s) => s === "promptc" });
  assert.equal(created.length, 2);
  assert.equal(created[0].stopped, 1);
  const [name, restart] = registered.find(([n]) => n === "promptc.restartServer");
  assert.equal(name, "promptc.restartServer");
  await restart();
  assert.equal(created.length, 3);
  await extension.deactivate();
  assert.equal(created[2].stopped, 1);
});

// `.prompt` is shared with Dotprompt (Firebase Genkit) and Humanloop, whose files start with a
// YAML `---` header: the extension acts only inside a promptc project and leaves those alone.

const DOTPROMPT = "---\nmodel: googleai/gemini-2.0-flash\n---\nHello {{name}}!\n";

test("a workspace that is no promptc project starts no server", async () => {
  const genkit = folderWith({ "package.json": "{}", "prompts/hello.prompt": DOTPROMPT, "pyproject.toml": "[project]\nname = 'x'\n" });
  const { extension, created } = loadExtension({ folder: genkit });
  await extension.activate({ subscriptions: [] });
  assert.equal(created.length, 0);
  const bare = loadExtension({ folder: null });
  await bare.extension.activate({ subscriptions: [] });
  assert.equal(bare.created.length, 0);
});

test("the default source folder makes a project without [tool.promptc]; nested projects count", async () => {
  const folder = folderWith({ "prompts_src/a.prompt": "Hi.\n", "services/agent/pyproject.toml": "[tool.promptc.defines]\nx = '1'\n", "genkit/hello.prompt": DOTPROMPT });
  const { extension, created } = loadExtension({ folder });
  await extension.activate({ subscriptions: [] });
  const bases = created[0].clientOptions.documentSelector.map((filter) => filter.pattern.baseUri.fsPath);
  assert.deepEqual(bases, [path.join(folder, "prompts_src"), path.join(folder, "services", "agent")]);
  const projects = extension.promptcProjects([], [folder]);
  assert.ok(extension.inProject(projects, path.join(folder, "prompts_src", "a.prompt")));
  assert.ok(!extension.inProject(projects, path.join(folder, "genkit", "hello.prompt")));
  assert.ok(!extension.inProject(projects, path.join(folder, "prompts_src_old", "a.prompt")));
});

test("a Dotprompt file beside a promptc one: handed to the Dotprompt language, the promptc one kept", async () => {
  const folder = folderWith({ ...PROMPTC_PROJECT, "prompts_src/genkit.prompt": DOTPROMPT });
  const ours = documentAt(path.join(folder, "prompts_src", "a.prompt"), "----- system -----\nHi.\n");
  const theirs = documentAt(path.join(folder, "prompts_src", "genkit.prompt"), DOTPROMPT);
  const { extension, changedLanguage, opened, created } = loadExtension({
    folder, documents: [ours, theirs], languages: ["prompt", "dotprompt", "yaml"],
  });
  await extension.activate({ subscriptions: [] });
  assert.deepEqual(changedLanguage, [[theirs.uri.fsPath, "dotprompt"]]);
  assert.equal(ours.languageId, "prompt");
  assert.equal(created.length, 1);
  // the neighbour claimed a promptc file of the project (both extensions register `.prompt`): it comes back
  const claimed = documentAt(path.join(folder, "prompts_src", "b.prompt"), "/// input: q\n${q}\n", "dotprompt");
  await opened[0](claimed);
  assert.equal(claimed.languageId, "prompt");
  // ...but not outside the project, and not a `---` file
  const outside = documentAt(path.join(os.tmpdir(), "elsewhere", "c.prompt"), "Hi ${x}\n", "dotprompt");
  await opened[0](outside);
  assert.equal(outside.languageId, "dotprompt");
  const header = documentAt(path.join(folder, "prompts_src", "d.prompt"), DOTPROMPT, "dotprompt");
  await opened[0](header);
  assert.equal(header.languageId, "dotprompt");
});

test("without a neighbour installed a `---` file keeps its language (the server leaves it alone)", async () => {
  const theirs = documentAt("/w/prompts_src/genkit.prompt", DOTPROMPT);
  const { extension } = loadExtension();
  assert.equal(extension.languageFor(theirs, ["/w/prompts_src"], ["prompt", "yaml"]), null);
  assert.equal(extension.languageFor(theirs, ["/w/prompts_src"], ["prompt", "humanloop"]), "humanloop");
});

test("the front matter is `---` on the first line, not a promptc separator", () => {
  const { extension } = loadExtension();
  const cases = JSON.parse(fs.readFileSync(path.join(__dirname, "front-matter.json"), "utf8"));
  for (const text of cases.foreign) assert.ok(extension.isForeign(text), JSON.stringify(text));
  for (const text of cases.promptc) assert.ok(!extension.isForeign(text), JSON.stringify(text));
  assert.ok(extension.hasPromptcTable('[project]\nname="x"\n\n[tool.promptc]\nsrc = "p"\n'));
  assert.ok(extension.hasPromptcTable("[ tool . promptc ]\n"));
  assert.ok(extension.hasPromptcTable("[tool.promptc.defines]\n"));
  assert.ok(!extension.hasPromptcTable("[tool.promptcx]\n"));
  assert.ok(!extension.hasPromptcTable("# [tool.promptc]\n[tool.ruff]\n"));
});
