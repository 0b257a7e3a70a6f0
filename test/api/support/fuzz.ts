import fc from 'fast-check'

/**
 * `.` and `..` as a path segment never reach the API: the client's URL parser removes them before anything is sent,
 * so the request would go to another route than the one a property is about.
 */
export const isDotSegment = (s: unknown): boolean => s === '.' || s === '..'

/** Any string as one path segment, except the dot segments. */
export const pathSegment = (): fc.Arbitrary<string> => fc.string().filter((s) => !isDotSegment(s))
