import { SluiceError } from '../errors.ts'
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'

/** Where the anvil binary of the npm package `@foundry-rs/anvil-linux-amd64` lives. */
export function anvilBinary(): string {
  try {
    return createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/bin/anvil')
  } catch {
    // An optional dependency, so that a dApp can install the package anywhere: npm installs it on Linux x64 only.
    throw new AnvilStartError(
      `anvil is not installed: @foundry-rs/anvil-linux-amd64 exists for Linux x64 only (this is ${process.platform}-${process.arch})`,
      '',
    )
  }
}

export type StartAnvilParameters = {
  host?: string
  /** 0 picks a free port. */
  port?: number
  /** Seconds between blocks; mines on demand (one block per transaction) when absent. */
  blockTime?: number
  chainId?: number
  /** Extra command-line arguments. */
  args?: string[]
}

export type Anvil = {
  rpcUrl: string
  port: number
  process: ChildProcess
  stop(): Promise<void>
}

export class AnvilStartError extends SluiceError {
  override name = 'AnvilStartError'
  override readonly code: string = 'ANVIL_START'
  constructor(
    message: string,
    readonly output: string,
  ) {
    super(message)
  }
}

/** anvil could not listen: the port is taken. */
export class AnvilPortInUseError extends AnvilStartError {
  override readonly code = 'ANVIL_PORT_IN_USE' as const
  constructor(output: string) {
    super('anvil address already in use', output)
  }
}

/** The first dev account of anvil's default mnemonic, funded with 10,000 ETH. */
export const anvilKeys = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
  '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356',
  '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6',
] as const

/** Spawns anvil and resolves once it listens; stop() sends SIGTERM and waits for the exit. */
export async function startAnvil(parameters: StartAnvilParameters = {}): Promise<Anvil> {
  const host = parameters.host ?? '127.0.0.1'
  const args = ['--host', host, '--port', String(parameters.port ?? 0)]
  if (parameters.blockTime !== undefined) args.push('--block-time', String(parameters.blockTime))
  if (parameters.chainId !== undefined) args.push('--chain-id', String(parameters.chainId))
  args.push(...(parameters.args ?? []))
  const child = spawn(anvilBinary(), args, { stdio: ['ignore', 'pipe', 'pipe'] })

  let output = ''
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString()
      const match = /Listening on [^\s:]+:(\d+)/.exec(output)
      if (match) resolve(Number(match[1]))
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.once('error', (e) => reject(new AnvilStartError(`anvil could not start: ${e.message}`, output)))
    child.once('exit', (code) => {
      // anvil says so only in its output: this is where its words become a code.
      if (/Address already in use|address in use/i.test(output)) reject(new AnvilPortInUseError(output))
      else reject(new AnvilStartError(`anvil exited with code ${code}`, output))
    })
  })
  // anvil logs every RPC call: keep draining so the pipe never fills and blocks it.
  child.stdout!.removeAllListeners('data').resume()
  child.stderr!.removeAllListeners('data').resume()
  child.removeAllListeners('exit')

  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null) resolve()
    else child.once('exit', () => resolve())
  })
  return {
    rpcUrl: `http://${host}:${port}`,
    port,
    process: child,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000)
        await exited
        clearTimeout(timer)
      }
    },
  }
}
