import { spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generatePrivateKey, privateKeyToAddress } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, inject, test } from 'vitest'
import { writeDeployment } from '../../src/devnet/deploymentFile.ts'
import { type Stage, stagePackages } from './support/stage.ts'

/**
 * @sluice/node's Node API as a host gets it: the built package (a fresh build in a folder of its own, laid out as
 * installed), imported by name from a plain Node script that starts a node on the test chain, and its declarations
 * type-checking a consumer (module nodenext, no skipLibCheck) that a wrong use fails.
 */
const repo = fileURLToPath(new URL('../..', import.meta.url))
let stage: Stage

function run(args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (c: Buffer) => (output += c))
    child.stderr.on('data', (c: Buffer) => (output += c))
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, output }))
  })
}

beforeAll(async () => {
  stage = await stagePackages({ install: true })
  await writeDeployment(join(stage.dir, 'deployment.json'), inject('deployment'))
}, 180_000)
afterAll(() => {
  if (stage) rmSync(stage.dir, { recursive: true, force: true })
})

describe("@sluice/node's Node API, built", () => {
  test('a Node script imports startNode from @sluice/node, starts a node on the chain, reaches it in-process and over HTTP, and stops it', async () => {
    const key = generatePrivateKey()
    writeFileSync(
      join(stage.dir, 'host.mjs'),
      [
        "import { startNode, InvalidOptionsError } from '@sluice/node'",
        `const node = await startNode({ rpc: ${JSON.stringify(inject('rpcUrl'))}, deployment: 'deployment.json', key: ${JSON.stringify(key)}, storage: 'memory', confirmations: 0, pollingInterval: 50, api: '127.0.0.1:0', logLevel: 'silent' })`,
        "const overHttp = await (await fetch(node.apiUrl + '/address')).json()",
        'const status = await node.status()',
        'await node.stop()',
        "const refused = await startNode({ rpc: 'nope' }).catch((e) => [e instanceof InvalidOptionsError, e.code])",
        'console.log(JSON.stringify({ address: node.address, overHttp, status, refused }))',
      ].join('\n'),
    )
    const { code, output } = await run(['host.mjs'], stage.dir)
    expect(output.trim().split('\n').at(-1), output).toBe(
      JSON.stringify({
        address: privateKeyToAddress(key),
        overHttp: { our_address: privateKeyToAddress(key) },
        status: { status: 'ready' },
        refused: [true, 'INVALID_OPTIONS'],
      }),
    )
    expect(code).toBe(0)
  }, 60_000)

  test('its declarations type-check a consumer (nodenext, no skipLibCheck) and carry the real types: a wrong use fails', async () => {
    writeFileSync(
      join(stage.dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2022', 'DOM'],
          strict: true,
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts', 'wrong.ts'],
      }),
    )
    writeFileSync(join(stage.dir, 'package.json'), JSON.stringify({ name: 'host', private: true, type: 'module' }))
    writeFileSync(
      join(stage.dir, 'consumer.ts'),
      [
        "import { startNode, type Address, type Channel, type HeadlessNode, type StartNodeOptions } from '@sluice/node'",
        "const options: StartNodeOptions = { rpc: 'http://127.0.0.1:8545', deployment: 'deployment.json', key: '0x01', dataDir: 'data', relay: ['/ip4/127.0.0.1/tcp/9090/ws/p2p/x'] }",
        'export async function use(): Promise<string> {',
        '  const node: HeadlessNode = await startNode(options)',
        '  const address: Address = node.address',
        "  await node.pay('0x1', address, { amount: 5n })",
        "  const channel: Channel = await node.channel('0x1', address)",
        '  const off = node.subscribe((e) => console.log(e.event, e.data))',
        '  off()',
        '  await node.stop()',
        '  return channel.balance',
        '}',
        '',
      ].join('\n'),
    )
    writeFileSync(
      join(stage.dir, 'wrong.ts'),
      [
        "import { startNode } from '@sluice/node'",
        "const node = await startNode({ rpc: 'http://127.0.0.1:8545', deployment: 'd.json', dataDir: 1 })",
        "await node.pay('0x1', '0x2', { amount: true })",
        'export {}',
        '',
      ].join('\n'),
    )
    // @types/node, which the consumer's own setup would bring, from the repository.
    const { output } = await run([join(repo, 'node_modules/typescript/bin/tsc'), '-p', '.'], stage.dir)
    const errors = output.split('\n').filter((line) => /error TS\d+/.test(line))
    expect(errors).toEqual([expect.stringMatching(/^wrong\.ts\(2,\d+\): error TS2\d+: /), expect.stringMatching(/^wrong\.ts\(3,\d+\): error TS2\d+: /)])
  }, 120_000)
})
