// The promptc extension: starts `promptc lsp` over stdio for `.prompt` files. Colours come from
// the TextMate grammar; everything else (diagnostics, hover, completion, code actions, the cache
// prefix lens) comes from the language server, so the editor and `promptc check` never disagree.
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const vscode = require("vscode");
const { LanguageClient, TransportKind } = require("vscode-languageclient/node");

let client = null;

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

async function start(context) {
  const { command, args } = currentCommand();
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const run = { command, args, transport: TransportKind.stdio, options: cwd ? { cwd } : {} };
  client = new LanguageClient(
    "promptc",
    "promptc",
    { run, debug: run },
    {
      documentSelector: [{ language: "prompt" }],
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
  );
  await start(context);
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate, serverCommand };
