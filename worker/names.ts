/** Names the page, the service worker and the node's worker agree on. */

/** The REST API's path, answered by the service worker for every page of the origin. */
export const API_PATH = '/api/v1'

/** The Web Lock the tab that runs the origin's node holds while it runs (the browser releases it with the tab). */
export const LEADER_LOCK = 'sluice:node'
