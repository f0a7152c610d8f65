#!/usr/bin/env node
// Fails when the code, the tests or a README cite a document that is not in the repository, or a
// section that its document does not have. Run by `npm run lint` (and so by CI).
//
// What it reads: every tracked text file (git ls-files). What it checks:
// - No citation of a document outside the repository: the project's starting brief, style notes
//   and interface text were never part of it (docs/ holds its own record).
// - `<file>.md §N`, `§N.M` and `§N rule K` name a heading `## N. …` / `### N.M …` of that file,
//   and a rule K as item K of a numbered list in that section, or a bullet `**rule K.**`.
// - `<file>.md "Heading"` names a heading of that file whose text contains "Heading".
// - `README "Heading"` (or `README.md`, `the README's`) names a heading of the citing package's
//   README; `core's README, "Heading"` one of packages/core's (or examples/<name>'s).
// A path is found from the repository root (`docs/decisions.md`); a bare name beside the citing
// file or in the nearest directory above it (`README.md` in a package is the package's README).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, trackedFiles } from './tracked-files.mjs';

const TEXT = /\.(ts|mts|cts|js|mjs|cjs|md|sql|json|ya?ml|sh)$|^\.ci\/run$/;
// This file names the forbidden documents in its own rules.
const SELF = 'scripts/check-citations.mjs';

const OUTSIDE = [
  /\bDESIGN\.md\b/,
  /\bSTYLE\.md\b/,
  /\bdeveloper-api\.md\b/,
  /\bshared\/(spec|DESIGN|STYLE)/,
  /\bspec §/,
  /\.\.\/shared\//,
];
// One section, or a list of them after one file: `docs/a.md §1, §4.3 rule 5 and §9`.
const ONE_SECTION = '§\\d+(?:\\.\\d+)?(?: rules? \\d+)?';
const SECTION = new RegExp(
  `((?:[\\w.-]+\\/)*[\\w.-]+\\.md) (${ONE_SECTION}(?:(?:, | and | or |–|-)${ONE_SECTION})*)`,
  'g',
);
const MIGRATION = /(^|\/)migrations\/(.+\/)?\d{4}_[a-z0-9_]+\.sql$/;
const HEADING = /((?:[\w.-]+\/)*[\w.-]+\.md),? "([^"\n]+)"/g;
// `README "Timeouts"`, `the README's "Rate limits"`, `core's README, "Metrics"`: a package's own
// README, or the named package's.
const README = /(?:\b([\w-]+)'s )?(?<![\w/.-])README(?:\.md)?(?:'s)?,? "([^"\n]+)"/g;

/** Every problem in `files` (paths relative to `root`), as `file:line: what` lines. */
export function checkCitations(root, files) {
  const problems = [];
  const documents = new Map();

  /**
   * The cited document. A path (`docs/decisions.md`) is from the root; a bare name (`README.md`)
   * is the nearest one beside the citing file or above it, up to the root.
   */
  function resolve(cited, from) {
    if (cited.includes('/')) {
      const fromRoot = path.join(root, cited);
      return existsSync(fromRoot) ? fromRoot : undefined;
    }
    for (let dir = path.dirname(path.join(root, from)); dir.startsWith(root); dir = path.dirname(dir)) {
      if (existsSync(path.join(dir, cited))) return path.join(dir, cited);
      if (dir === root) break;
    }
    return undefined;
  }

  /** The headings of a Markdown file, each with the numbered list items of its section. */
  function headingsOf(file) {
    let headings = documents.get(file);
    if (headings) return headings;
    headings = [];
    let inFence = false;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (/^\s*```/.test(line)) inFence = !inFence;
      if (inFence) continue;
      const heading = /^(#{1,6})\s+(.*)$/.exec(line);
      if (heading) {
        headings.push({ text: heading[2].trim(), rules: 0 });
        continue;
      }
      // A rule is a numbered list item (`1. …`) or a bullet that names it (`- **rule 1.** …`).
      const item = /^(\d+)\.\s/.exec(line) ?? /^\s*[-*]\s+\*\*rule (\d+)\.?\*\*/i.exec(line);
      if (item && headings.length > 0) {
        const current = headings.at(-1);
        current.rules = Math.max(current.rules, Number(item[1]));
      }
    }
    documents.set(file, headings);
    return headings;
  }

  for (const file of files) {
    const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
    lines.forEach((line, index) => {
      const where = `${file}:${index + 1}`;
      for (const pattern of OUTSIDE) {
        if (pattern.test(line))
          problems.push(`${where}: cites a document outside the repository: ${line.trim()}`);
      }
      // A released migration never changes, not even a comment (its checksum would refuse every
      // database it ran on), so a section it names is not held to the docs as they are now.
      if (MIGRATION.test(file)) return;
      for (const [, cited, list] of line.matchAll(SECTION)) {
        const target = resolve(cited, file);
        if (!target) {
          problems.push(`${where}: ${cited} does not exist`);
          continue;
        }
        for (const [, major, minor, rule] of list.matchAll(/§(\d+)(?:\.(\d+))?(?: rules? (\d+))?/g)) {
          const number = minor === undefined ? `${major}.` : `${major}.${minor}`;
          const section = headingsOf(target).find(
            (heading) => heading.text.startsWith(`${number} `) || heading.text === number,
          );
          if (!section) {
            problems.push(`${where}: ${cited} has no section §${minor === undefined ? major : number}`);
          } else if (rule !== undefined && Number(rule) > section.rules) {
            problems.push(`${where}: ${cited} §${number.replace(/\.$/, '')} has no rule ${rule}`);
          }
        }
      }
      const headed = (cited, target, text) => {
        if (!target) {
          problems.push(`${where}: ${cited} does not exist`);
          return;
        }
        const wanted = text.toLowerCase();
        if (!headingsOf(target).some((heading) => heading.text.toLowerCase().includes(wanted))) {
          problems.push(`${where}: ${cited} has no heading "${text}"`);
        }
      };
      for (const [, cited, text] of line.matchAll(HEADING)) {
        // A bare README.md is the README pattern's (below): the citing package's own.
        if (cited !== 'README.md') headed(cited, resolve(cited, file), text);
      }
      for (const [, owner, text] of line.matchAll(README)) {
        const named = owner && !['the', 'root'].includes(owner.toLowerCase());
        const target = named
          ? [`packages/${owner}/README.md`, `examples/${owner}/README.md`]
              .map((candidate) => path.join(root, candidate))
              .find((candidate) => existsSync(candidate))
          : resolve('README.md', file);
        headed(named ? `${owner}'s README` : 'README.md', target, text);
      }
    });
  }
  return problems;
}

/**
 * The checker checked: a scratch tree with one good citation of each kind and one bad one, whose
 * problems must be exactly the bad ones. Run before the real check, so a checker that stopped
 * finding anything fails too.
 */
function selfTest() {
  const dir = mkdtempSync(path.join(tmpdir(), 'check-citations-'));
  try {
    const write = (file, text) => {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    };
    write('docs/a.md', '# A\n\n## 1. One\n\n1. first\n2. second\n\n### 1.2 Sub\n\n- **rule 1.** x\n');
    write('pkg/README.md', '# pkg\n\n## Usage\n');
    const cited = [
      '// docs/a.md §1, docs/a.md §1 rule 2, docs/a.md §1.2 rule 1, README "Usage", pkg/README.md "Usage"',
      '// docs/a.md §2',
      '// docs/a.md §1.3',
      '// docs/a.md §1 rule 3',
      '// docs/missing.md §1',
      '// README "Nope"',
      `// ${'DESIGN'}.md §2`,
      '// docs/a.md §1.2 and §7',
    ];
    write('pkg/src/x.ts', `${cited.join('\n')}\n`);
    const found = checkCitations(dir, ['pkg/src/x.ts']).map((problem) => problem.split(': ')[0]);
    write('pkg/migrations/0001_first.sql', '-- docs/a.md §9: a released file is not held to the docs\n');
    found.push(
      ...checkCitations(dir, ['pkg/migrations/0001_first.sql']).map((problem) => problem.split(': ')[0]),
    );
    const expected = [2, 3, 4, 5, 6, 7, 7, 8].map((line) => `pkg/src/x.ts:${line}`);
    if (JSON.stringify(found) !== JSON.stringify(expected)) {
      throw new Error(
        `check-citations: the self-test found ${JSON.stringify(found)}, expected ${JSON.stringify(expected)}`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  selfTest();
  const files = trackedFiles((file) => TEXT.test(file) && file !== SELF);
  const problems = checkCitations(ROOT, files);
  if (problems.length > 0) {
    console.error(`check-citations: ${problems.length} problem(s)\n${problems.join('\n')}`);
    process.exit(1);
  }
  console.log(`check-citations: ${files.length} files, every cited document and section exists`);
}
