/** Names the page, the service worker and the node's worker agree on. */

/** The REST API's path, answered by the service worker for every page of the origin. */
export const API_PATH = '/api/v1'

/** The Web Lock the tab that runs the origin's node holds while it runs (the browser releases it with the tab). */
export const LEADER_LOCK = 'sluice:node'

/** What the node's worker posts to the page once its module has run: an error before it is the script's own. */
export const WORKER_LOADED = 'sluice:worker-loaded'
