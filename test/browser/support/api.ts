import { expect } from 'vitest'

export type Answer = { status: number; body: any }

/** fetch('/api/v1' + path) from this page, through the service worker, as status and JSON. */
export async function api(method: string, path: string, body?: unknown): Promise<Answer> {
  const response = await fetch(`/api/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  })
  const text = await response.text()
  expect(response.headers.get('content-type') ?? '', `${method} ${path}`).toMatch(text ? /^application\/json/ : /.*/)
  return { status: response.status, body: text ? JSON.parse(text) : null }
}
