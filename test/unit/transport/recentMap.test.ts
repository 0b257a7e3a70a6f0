import { expect, test } from 'vitest'
import { RecentMap } from '../../../src/transport/recentMap.ts'

test('remembers only the most recently set keys, up to its limit', () => {
  const map = new RecentMap<string, number>(2)
  map.set('a', 1)
  map.set('b', 2)
  map.set('a', 3) // a is young again
  map.set('c', 4)
  expect(map.size).toBe(2)
  expect(map.get('b')).toBeUndefined()
  expect(map.get('a')).toBe(3)
  expect(map.get('c')).toBe(4)
})
