import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Address } from 'viem'
import type { NodeCommand, NodeProcessConfig, NodeProcessMessage } from './nodeProcess.ts'

const script = fileURLToPath(new URL('./nodeProcessBoot.mjs', import.meta.url))

/** A node notice, with when the parent got it (performance.now()). */
export type Notice = { type: string; at: number } & Record<string, unknown>

/** A node running in a child process (nodeProcess.ts), which the test can SIGKILL and start again. */
export type NodeProcess = {
  readonly name: string
  readonly address: Address
  /** Every notice the node published, across restarts, in order. */
  readonly notices: Notice[]
  /** Milliseconds from fork to `ready`, one per start. */
  readonly startTimes: number[]
  readonly pid: number
  call<T = unknown>(command: NodeCommand): Promise<T>
  /** SIGKILL: no chance to flush or close anything. Resolves once the process is gone. */
  kill(): Promise<void>
  /** Forks it again on the same data directory; resolves once the node has started. */
  restart(): Promise<void>
  stop(): Promise<void>
  /** What the process wrote to stdout and stderr (for failure messages). */
  output(): string
}

export class NodeProcessExitedError extends Error {
  override name = 'NodeProcessExitedError' as const
}

export async function spawnNodeProcess(name: string, config: NodeProcessConfig): Promise<NodeProcess> {
  let child!: ChildProcess
  let exited!: Promise<void>
  let address!: Address
  let nextId = 0
  let output = ''
  const notices: Notice[] = []
  const startTimes: number[] = []
  const pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>()

  const start = () =>
    new Promise<void>((resolve, reject) => {
      const forkedAt = performance.now()
      child = fork(script, [], {
        execArgv: [],
        env: { ...process.env, SLUICE_NODE_CONFIG: JSON.stringify(config) },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        // bigint and nested objects cross the channel as they are.
        serialization: 'advanced',
      })
      const current = child
      current.stdout!.on('data', (c: Buffer) => (output += c.toString()))
      current.stderr!.on('data', (c: Buffer) => (output += c.toString()))
      exited = new Promise((done) =>
        current.once('exit', (code, signal) => {
          for (const p of pending.values()) p.reject(new NodeProcessExitedError(`${name} exited (${signal ?? code}) before answering`))
          pending.clear()
          reject(new NodeProcessExitedError(`${name} exited (${signal ?? code}) before it was ready\n${output}`))
          done()
        }),
      )
      current.on('message', (message: NodeProcessMessage) => {
        switch (message.type) {
          case 'ready':
            address = message.address
            startTimes.push(performance.now() - forkedAt)
            resolve()
            return
          case 'notice':
            notices.push({ ...message.notice, at: performance.now() })
            return
          case 'answer': {
            const p = pending.get(message.id)
            pending.delete(message.id)
            if (message.ok) p?.resolve(message.result)
            else p?.reject(new Error(`${name}: ${message.error}`))
          }
        }
      })
    })

  await start()
  return {
    name,
    get address() {
      return address
    },
    notices,
    startTimes,
    get pid() {
      return child.pid!
    },
    call<T>(command: NodeCommand) {
      const id = nextId++
      return new Promise<T>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (v: unknown) => void, reject })
        child.send({ id, command })
      })
    },
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
    restart: start,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const stopped = new Promise<void>((r) => child.once('exit', () => r()))
      child.send({ id: nextId++, command: { cmd: 'stop' } })
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await stopped
      clearTimeout(timer)
    },
    output: () => output,
  }
}
