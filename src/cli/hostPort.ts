/** `HOST:PORT`, `[::1]:PORT`; port 0 picks a free one. */
export type HostPort = { host: string; port: number }

export function parseHostPort(raw: string): HostPort | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(raw)
  if (!m) return undefined
  const port = Number(m[3])
  return port <= 65535 ? { host: (m[1] ?? m[2])!, port } : undefined
}
