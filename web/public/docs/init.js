// Renders the service's OpenAPI document at /docs with Swagger UI, served by the service
// itself (copied from swagger-ui-dist at build time): no CDN, and no inline script, so the
// page keeps the same Content-Security-Policy as the web client.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // The default validator badge calls validator.swagger.io, a third-party origin.
  validatorUrl: null,
});
