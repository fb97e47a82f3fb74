import Foundation

/// The OpenAPI description of the HTTP API, served at `GET /openapi.yaml` (docs/design.md §2.3).
///
/// The document is the file `openapi.yaml` beside this one, a resource of this target, served as it is written.
/// It is precise enough for a schema-driven fuzzer (scripts/schema-check.sh runs schemathesis against it): every
/// request body with its fields, types, required lists and bounds, every response status a route can return,
/// and the response bodies. What a schema cannot say (control and format characters refused, lengths checked
/// after lower-casing) is said in the descriptions. Keep it in step with the routes: OpenAPIContractTests fails
/// until the document and the router agree (docs/fuzzing.md).
enum OpenAPIDocument {
    /// The whole document, byte for byte as `openapi.yaml` holds it.
    static let yaml: String = {
        // The file is part of the build: a missing one is a broken installation, where the resource folder
        // (offer-signer_OfferSignerServer.resources) was not copied beside the binary.
        guard let url = Bundle.module.url(forResource: "openapi", withExtension: "yaml") else {
            fatalError("openapi.yaml is missing from this target's resources; install the resource folder beside the binary.")
        }
        do {
            return try String(contentsOf: url, encoding: .utf8)
        } catch {
            fatalError("openapi.yaml could not be read from \(url.path): \(error)")
        }
    }()
}
