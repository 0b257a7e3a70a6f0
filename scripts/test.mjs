#!/usr/bin/env node
// `npm test`: typecheck, format and lint, the compiled contracts are up to date, then every vitest test (Node,
// Chromium, and the engine suites in Chromium, Firefox and WebKit). The last line is `N passed, N failed`, counting the three checks and every test. Each step says when it
// starts (`▶ ...`), so a long run can be followed; vitest's reporter then prints each test file as it ends.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'

const extraArgs = process.argv.slice(2)
let passed = 0
let failed = 0

function run(cmd, args, env = process.env) {
  return spawnSync(cmd, args, { stdio: 'inherit', env }).status === 0
}

/**
 * The browsers the tests run in (docs/decisions/0058): Chromium always (the vitest browser project); Firefox ESR and
 * WebKitGTK's WebDriver with Xvfb for the engine suites, unless SLUICE_ENGINES leaves them out. And the relay's TLS
 * tests' tools (docs/decisions/0060): openssl, certutil (libnss3-tools), nginx and Caddy. Missing ones are
 * installed from Debian's packages when we are root with apt, as on CI (the services of nginx and Caddy not
 * started: the tests run them); otherwise the command to run is said.
 */
function findBrowsers() {
  const engines = process.env.SLUICE_ENGINES?.split(',').map((e) => e.trim()) ?? ['chromium', 'firefox', 'webkit']
  const needed = [
    ['chromium', process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'],
    ...(engines.includes('firefox') ? [['firefox-esr', process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr']] : []),
    ...(engines.includes('webkit')
      ? [
          ['webkit2gtk-driver', process.env.WEBKIT_DRIVER_PATH ?? '/usr/bin/WebKitWebDriver'],
          ['xvfb', '/usr/bin/Xvfb'],
        ]
      : []),
    ['openssl', '/usr/bin/openssl'],
    ['libnss3-tools', '/usr/bin/certutil'],
    ['nginx', '/usr/sbin/nginx'],
    ['caddy', '/usr/bin/caddy'],
    // The stores on PostgreSQL (docs/decisions/0075): the tests start their own server with Debian's initdb and pg_ctl.
    ['postgresql', postgresInitdb()],
  ]
  const missing = () => needed.filter(([, path]) => !existsSync(path)).map(([pkg]) => pkg)
  const packages = missing()
  if (packages.length === 0) return process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
  const isRoot = process.getuid?.() === 0
  const hasApt = existsSync('/usr/bin/apt-get')
  if (isRoot && hasApt) {
    console.log(`Installing Debian's ${packages.join(', ')} with apt-get (the tests' browsers and tools)`)
    // Services a package would start (nginx's, Caddy's, PostgreSQL's) stay stopped: policy-rc.d says no while apt runs.
    const policy = '/usr/sbin/policy-rc.d'
    const ownPolicy = !existsSync(policy)
    if (ownPolicy) writeFileSync(policy, '#!/bin/sh\nexit 101\n', { mode: 0o755 })
    try {
      if (run('apt-get', ['update', '-qq']) && run('apt-get', ['install', '-y', '-qq', ...packages]) && missing().length === 0)
        return process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'
    } finally {
      if (ownPolicy) rmSync(policy, { force: true })
    }
  }
  console.error(
    `The tests' browsers or tools are missing: install them with \`sudo apt-get update && sudo apt-get install -y ${missing().join(' ')}\` (or set CHROMIUM_PATH, FIREFOX_PATH; SLUICE_ENGINES=chromium runs the engine suites in Chromium only).`,
  )
  process.exit(1)
}

/** Debian's initdb, under /usr/lib/postgresql/<version>/bin (not on PATH), or where it would be. */
function postgresInitdb() {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(`${root}/${v}/bin/initdb`)) : []
  return versions.length > 0 ? `${root}/${versions[0]}/bin/initdb` : `${root}/15/bin/initdb`
}

/**
 * What the tests across hosts need (test/network/, docs/decisions/0063): as root, iproute2 (ip, bridge, tc), ethtool
 * and flock, installed from Debian's packages when missing, as on CI. Without root those tests are skipped.
 */
function findNetworkTools() {
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) return
  const dirs = [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/sbin']
  const tools = { ip: 'iproute2', bridge: 'iproute2', tc: 'iproute2', ethtool: 'ethtool', flock: 'util-linux' }
  const packages = [...new Set(Object.entries(tools).flatMap(([tool, pkg]) => (dirs.some((d) => existsSync(`${d}/${tool}`)) ? [] : [pkg])))]
  if (packages.length === 0) return
  console.log(`Installing Debian's ${packages.join(', ')} with apt-get (the tests across hosts)`)
  if (!run('apt-get', ['update', '-qq']) || !run('apt-get', ['install', '-y', '-qq', ...packages])) {
    console.error(`Could not install ${packages.join(' ')}: the tests in test/network/ will fail.`)
  }
}

const chromium = findBrowsers()
findNetworkTools()

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
