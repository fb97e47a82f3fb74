import Foundation

/// The OpenAPI description of the HTTP API, served at `GET /openapi.yaml` (docs/design.md §2.3).
///
/// The document is the file `openapi.yaml` beside this one, a resource of this target, served as it is written.
/// It is precise enough for a schema-driven fuzzer (IntegrationTests/schema-check.sh runs schemathesis against it): every
/// request body with its fields, types, required lists and bounds, every response status a route can return,
/// and the response bodies. What a schema cannot say (control and format characters refused, lengths checked
/// after lower-casing) is said in the descriptions. Keep it in step with the routes: OpenAPIContractTests fails
/// until the document and the router agree (docs/fuzzing.md).
///
/// What only `serve --demo` serves is described only when the demo serves it: the path items under `/demo/` and
/// the components whose names begin with `Demo` (see ``withoutDemo``).
enum OpenAPIDocument {
    /// The whole document, byte for byte as `openapi.yaml` holds it: what a server with the demo's routes serves.
    /// Empty when the resource folder is missing (a binary copied without `offer-signer_OfferSignerServer.resources`):
    /// `/openapi.yaml` then answers 404 and start-up logs why, instead of the process stopping.
    static let yaml: String = location.flatMap { try? String(contentsOf: $0, encoding: .utf8) } ?? ""

    /// The resource folder's name, as SwiftPM names it.
    static let resourceFolder = "offer-signer_OfferSignerServer.resources"

    /// Where `openapi.yaml` is: in the resource folder beside the running binary (an installation, a build), or
    /// beside the test bundle; `nil` when in none of them. (SwiftPM's own accessor stops the process when the folder
    /// is missing, so it is not used.)
    static let location: URL? = {
        var folders = [Bundle.main.bundleURL, Bundle.main.bundleURL.deletingLastPathComponent()]
        if let executable = Bundle.main.executableURL {
            folders.append(executable.deletingLastPathComponent())
            folders.append(executable.resolvingSymlinksInPath().deletingLastPathComponent())
        }
        for folder in folders {
            let file = folder.appendingPathComponent(resourceFolder).appendingPathComponent("openapi.yaml")
            if FileManager.default.isReadableFile(atPath: file.path) { return file }
        }
        return nil
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
            let isDemoEntry =
                switch (section, indentation) {
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
