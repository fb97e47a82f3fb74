import Foundation

/// The OpenAPI description of the HTTP API, served at `GET /openapi.yaml` (docs/design.md §2.3).
///
/// The document is the file `openapi.yaml` beside this one, a resource of this target, served as it is written.
/// It is precise enough for a schema-driven fuzzer (scripts/schema-check.sh runs schemathesis against it): every
/// request body with its fields, types, required lists and bounds, every response status a route can return,
/// and the response bodies. What a schema cannot say (control and format characters refused, lengths checked
/// after lower-casing) is said in the descriptions. Keep it in step with the routes: OpenAPIContractTests fails
/// until the document and the router agree (docs/fuzzing.md).
///
/// What only `serve --demo` serves is described only when the demo serves it: the path items under `/demo/` and
/// the components whose names begin with `Demo` (see ``withoutDemo``).
enum OpenAPIDocument {
    /// The whole document, byte for byte as `openapi.yaml` holds it: what a server with the demo's routes serves.
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

    /// The document without the demo's routes: what a server without `--demo` serves.
    static let withoutDemo: String = removingDemo(from: yaml)

    /// The document a server serves: with the demo's routes only when it registers them.
    static func yaml(describingDemo demo: Bool) -> String {
        demo ? yaml : withoutDemo
    }

    /// `document` without the entries only the demo serves: each path item whose path begins with `/demo/`, and
    /// each component whose name begins with `Demo`, each with every line under it. Every other line is kept as
    /// it is. The document's layout is known (two spaces per level), so lines are enough.
    static func removingDemo(from document: String) -> String {
        var kept: [Substring] = []
        var section: Substring = ""  // the top-level key the line is under
        var droppingUnder: Int?  // the indentation of the entry being dropped
        for line in document.split(separator: "\n", omittingEmptySubsequences: false) {
            let indentation = line.prefix { $0 == " " }.count
            let content = line.dropFirst(indentation)
            if content.isEmpty {  // a blank line, or the end after the last newline: kept
                kept.append(line)
                continue
            }
            if let depth = droppingUnder, indentation > depth { continue }
            droppingUnder = nil
            if indentation == 0 { section = content }
            let isDemoEntry = switch (section, indentation) {
            case ("paths:", 2): content.hasPrefix("/demo/")
            case ("components:", 4): content.hasPrefix("Demo")
            default: false
            }
            if isDemoEntry {
                droppingUnder = indentation
            } else {
                kept.append(line)
            }
        }
        return kept.joined(separator: "\n")
    }
}
