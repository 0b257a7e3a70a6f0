import { createServer } from 'node:net'
import { describe, expect, test } from 'vitest'
import { startAnvil } from '../../../src/devnet/anvil.ts'

describe('startAnvil', () => {
  test('starts on a free port, answers RPC, and stops', async () => {
    const anvil = await startAnvil()
    const res = await fetch(anvil.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
    })
    expect((await res.json()).result).toBe('0x7a69')
    await anvil.stop()
    expect(anvil.process.exitCode ?? anvil.process.signalCode).not.toBeNull()
  })

  test('refuses a port already in use with a clear error', async () => {
    const server = createServer()
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    const port = (server.address() as { port: number }).port
    await expect(startAnvil({ port })).rejects.toThrow(/address already in use/)
    server.close()
  })
})
