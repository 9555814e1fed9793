// The API reference page: Scalar's renderer on the document this service
// serves, so the page cannot disagree with the API. This script runs before
// the renderer's and starts it once the page is parsed.
//
// Everything the page loads comes from this origin, and its
// Content-Security-Policy allows nothing else: the configuration turns off
// what would reach Scalar's servers (the default fonts, the request proxy,
// the developer tools, agent and MCP panels, and the buttons that open the
// document in Scalar's hosted client), and requests sent from the page go
// straight to this service. No eval either: zod, inside the
// renderer, probes whether it may compile code unless told not to.
globalThis.__zod_globalConfig = { jitless: true };

document.addEventListener('DOMContentLoaded', () => {
  Scalar.createApiReference('#reference', {
    url: 'openapi.yaml',
    proxyUrl: '',
    withDefaultFonts: false,
    telemetry: false,
    showDeveloperTools: 'never',
    agent: { disabled: true },
    mcp: { disabled: true },
    hideClientButton: true,
    documentDownloadType: 'yaml',
    // A small API: every route and event shown at once, no tag to open.
    defaultOpenAllTags: true,
    authentication: { preferredSecurityScheme: 'bearerAuth' },
  });
});
