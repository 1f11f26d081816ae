// The promptc extension: starts `promptc lsp` over stdio for `.prompt` files. Colours come from
// the TextMate grammar; everything else (diagnostics, hover, completion, code actions, the cache
// prefix lens) comes from the language server, so the editor and `promptc check` never disagree.
//
// `.prompt` is shared: Dotprompt (Firebase Genkit) and Humanloop use it too, with a YAML `---`
// header. The extension acts only inside a promptc project (a pyproject.toml with [tool.promptc],
// or a workspace folder with the default source folder `prompts_src/`), and leaves a file that
// starts with `---` to its own extension: the server is told only about files of those projects,
// and a `---` file opened as promptc's is handed to the Dotprompt language when that is installed.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client = null;

/** The language ids of the `.prompt` neighbours, in the order a `---` file is handed to them. */
const NEIGHBOURS = ["dotprompt", "humanloop"];

/** The first line of a YAML front matter (what the server's `workspace.FRONT_MATTER` matches). */
const FRONT_MATTER = /^\uFEFF?---[ \t]*(?:#[^\r\n]*)?(?:\r\n|\r|\n|$)/;

/** A `.prompt` file of another tool: it starts with a YAML `---` header. */
function isForeign(text) {
  return FRONT_MATTER.test(String(text).slice(0, 64));
}

/** Whether a pyproject.toml's text has a [tool.promptc] table (or a sub-table of it). */
function hasPromptcTable(text) {
  return /^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*(?:promptc|"promptc")[ \t]*(?:\]|\.)/m.test(String(text));
}

/**
 * The promptc projects of a workspace, as the folders whose `.prompt` files are promptc's: the
 * folder of every pyproject.toml with [tool.promptc] (`pyprojects`: [{ path, text }]), and the
 * `prompts_src/` of a workspace folder that has one and no such pyproject.toml above it.
 */
function promptcProjects(pyprojects, folders, isDirectory = (p) => fs.existsSync(p) && fs.statSync(p).isDirectory()) {
  const roots = pyprojects.filter((file) => hasPromptcTable(file.text)).map((file) => path.dirname(file.path));
  for (const folder of folders) {
    const src = path.join(folder, "prompts_src");
    if (!roots.some((root) => within(root, src)) && isDirectory(src)) roots.push(src);
  }
  return [...new Set(roots)].sort();
}

function within(folder, file) {
  const rel = path.relative(folder, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Whether a file belongs to one of the projects. */
function inProject(projects, file) {
  return projects.some((root) => within(root, file));
}

/** The language client's document selector: promptc's language, on disk, in a project only. */
function documentSelector(projects, RelativePattern, Uri) {
  return projects.map((root) => ({
    language: "prompt",
    scheme: "file",
    pattern: new RelativePattern(Uri.file(root), "**/*.prompt"),
  }));
}

/**
 * The language a `.prompt` document should have, or null to leave it: a `---` file opened as
 * promptc's goes to an installed neighbour; a file of a promptc project without the header that a
 * neighbour claimed comes back to promptc.
 */
function languageFor(document, projects, languages) {
  if (document.uri.scheme !== "file" || !document.uri.fsPath.endsWith(".prompt")) return null;
  const foreign = isForeign(document.getText());
  if (document.languageId === "prompt" && foreign) {
    return NEIGHBOURS.find((id) => languages.includes(id)) ?? null;
  }
  if (NEIGHBOURS.includes(document.languageId) && !foreign && inProject(projects, document.uri.fsPath)) {
    return "prompt";
  }
  return null;
}

/** The command and arguments that start the server, from the settings and the workspace. */
function serverCommand(settings, workspaceFolder, platform = process.platform, exists = fs.existsSync) {
  const args = ["lsp", ...(Array.isArray(settings.args) ? settings.args.map(String) : [])];
  let command = typeof settings.path === "string" ? settings.path.trim() : "";
  if (command) {
    if (workspaceFolder) command = command.split("${workspaceFolder}").join(workspaceFolder);
    return { command, args };
  }
  if (workspaceFolder) {
    const venv = platform === "win32"
      ? path.join(workspaceFolder, ".venv", "Scripts", "promptc.exe")
      : path.join(workspaceFolder, ".venv", "bin", "promptc");
    if (exists(venv)) return { command: venv, args };
  }
  return { command: "promptc", args };
}

function currentCommand() {
  const config = vscode.workspace.getConfiguration("promptc");
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return serverCommand({ path: config.get("path"), args: config.get("args") }, folder);
}

/** The promptc projects of the open workspace (pyproject.toml files found, then read). */
async function findProjects() {
  const folders = (vscode.workspace.workspaceFolders ?? []).map((folder) => folder.uri.fsPath);
  const found = await vscode.workspace.findFiles("**/pyproject.toml", "**/{node_modules,.venv,.git}/**", 200);
  const pyprojects = [];
  for (const uri of found) {
    try {
      pyprojects.push({ path: uri.fsPath, text: fs.readFileSync(uri.fsPath, "utf8") });
    } catch {
      // unreadable: not a project
    }
  }
  return promptcProjects(pyprojects, folders);
}

let projects = [];

async function claim(document) {
  const language = languageFor(document, projects, await vscode.languages.getLanguages());
  if (language) await vscode.languages.setTextDocumentLanguage(document, language);
}

async function start(context) {
  projects = await findProjects();
  for (const document of vscode.workspace.textDocuments) await claim(document);
  if (projects.length === 0) return; // no promptc project: the server is not started
  const { command, args } = currentCommand();
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const run = { command, args, transport: TransportKind.stdio, options: cwd ? { cwd } : {} };
  client = new LanguageClient(
    "promptc",
    "promptc",
    { run, debug: run },
    {
      documentSelector: documentSelector(projects, vscode.RelativePattern, vscode.Uri),
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/{*.prompt,*.json,pyproject.toml}") },
    },
  );
  try {
    await client.start();
  } catch (error) {
    vscode.window.showErrorMessage(
      `promptc: could not start \`${[command, ...args].join(" ")}\` (${error.message || error}). ` +
        "Install promptc in the workspace's .venv or set `promptc.path`.",
    );
  }
}

async function stop() {
  if (client) {
    const running = client;
    client = null;
    await running.stop().catch(() => undefined);
  }
}

async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand("promptc.restartServer", async () => {
      await stop();
      await start(context);
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (event.affectsConfiguration("promptc")) {
        await stop();
        await start(context);
      }
    }),
    vscode.workspace.onDidOpenTextDocument((document) => claim(document)),
  );
  // a pyproject.toml gaining or losing [tool.promptc], or a prompts_src/ appearing, changes the projects
  const watcher = vscode.workspace.createFileSystemWatcher("**/{pyproject.toml,prompts_src}");
  const refresh = async () => {
    const now = await findProjects();
    if (now.join("\n") !== projects.join("\n")) {
      await stop();
      await start(context);
    }
  };
  context.subscriptions.push(watcher, watcher.onDidCreate(refresh), watcher.onDidChange(refresh), watcher.onDidDelete(refresh));
  await start(context);
}

function deactivate() {
  return stop();
}

module.exports = {
  activate,
  deactivate,
  serverCommand,
  isForeign,
  hasPromptcTable,
  promptcProjects,
  inProject,
  documentSelector,
  languageFor,
};
