#!/usr/bin/env node
// `npm test`: typecheck, format and lint, the compiled contracts are up to date, then every vitest test (Node and
// Chromium). The last line is `N passed, N failed`, counting the three checks and every test. Each step says when it
// starts (`▶ ...`), so a long run can be followed; vitest's reporter then prints each test file as it ends.
import { spawnSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync } from 'node:fs'

const extraArgs = process.argv.slice(2)
let passed = 0
let failed = 0

function run(cmd, args, env = process.env) {
  return spawnSync(cmd, args, { stdio: 'inherit', env }).status === 0
}

function findChromium() {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'].filter(Boolean)
  const found = candidates.find((p) => existsSync(p))
  if (found) return found
  const isRoot = process.getuid?.() === 0
  const hasApt = existsSync('/usr/bin/apt-get')
  if (isRoot && hasApt) {
    console.log("Chromium is missing: installing Debian's chromium with apt-get")
    if (run('apt-get', ['update', '-qq']) && run('apt-get', ['install', '-y', '-qq', 'chromium']) && existsSync('/usr/bin/chromium')) return '/usr/bin/chromium'
  }
  console.error('Chromium not found. Install it with `sudo apt-get update && sudo apt-get install -y chromium`, or set CHROMIUM_PATH.')
  process.exit(1)
}

const chromium = findChromium()

for (const [label, cmd, args] of [
  ['typecheck', 'npx', ['tsc', '-p', '.']],
  ['format and lint (biome)', 'node', ['scripts/biome.mjs', 'ci', '.']],
  ['contracts up to date', 'node', ['scripts/compile.mjs', '--check']],
]) {
  console.log(`▶ ${label}`)
  if (run(cmd, args)) {
    passed++
    console.log(`✓ ${label}`)
  } else {
    failed++
    console.log(`✗ ${label}`)
  }
}

rmSync('.vitest-summary.json', { force: true })
console.log(`▶ tests (vitest run${extraArgs.length > 0 ? ` ${extraArgs.join(' ')}` : ''}: the Node and Chromium projects)`)
const vitestOk = run('npx', ['vitest', 'run', ...extraArgs], { ...process.env, CHROMIUM_PATH: chromium })
if (existsSync('.vitest-summary.json')) {
  const s = JSON.parse(readFileSync('.vitest-summary.json', 'utf8'))
  passed += s.passed
  failed += s.failed
  if (!vitestOk && s.failed === 0) failed++ // vitest failed outside any test (config, setup, teardown)
  rmSync('.vitest-summary.json', { force: true })
} else {
  failed++
}
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed === 0 && vitestOk ? 0 : 1)
