// Preloaded (node --import) into the peer gateway's process only. On Node, a fetch Response's
// headers are immutable, and the peer's streaming path appends its own headers to the upstream
// response and fails with "TypeError: immutable" (Portkey-AI/gateway issues 1389 and 1550). This
// hands it a copy with ordinary headers, as its Workers runtime would: one extra Response object
// per upstream call, the only change made to the peer.
const upstreamFetch = globalThis.fetch;

globalThis.fetch = async (input, init) => {
  const response = await upstreamFetch(input, init);
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers: new Headers(response.headers),
  });
};
