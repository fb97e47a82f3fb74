import HTTPTypes
import Hummingbird
import Synchronization

/// The methods each registered path accepts, so that a request for a known path with another method gets 405
/// with `Allow` instead of 404. Filled once the router's routes are registered (``buildRouter``); read by
/// ``ErrorMappingMiddleware`` when routing finds nothing.
final class AllowedMethods: Sendable {
    private let table = Mutex<[(components: [RouterPath.Element], methods: Set<String>)]>([])

    /// Records the router's routes, their paths as the router prints them (`/admin/keys/{keyIdentifier}/activate`;
    /// `:keyIdentifier` is read the same way).
    func record(_ routes: [(path: String, method: String)]) {
        var grouped: [String: Set<String>] = [:]
        for route in routes {
            grouped[route.path, default: []].insert(route.method)
            if route.method == "GET" { grouped[route.path, default: []].insert("HEAD") }  // the router's generated HEAD
        }
        let rows = grouped.map { (components: RouterPath($0.key).components, methods: $0.value) }
        table.withLock { $0 = rows }
    }

    /// The methods `path` accepts, sorted (empty: no route has this path). A path parameter (`{id}`, `:id`) matches
    /// any segment, as the router matches it; `**` matches the rest of the path.
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        return table.withLock { rows in
            var methods: Set<String> = []
            for row in rows where Self.matches(row.components, segments) {
                methods.formUnion(row.methods)
            }
            return methods.sorted()
        }
    }

    private static func matches(_ components: [RouterPath.Element], _ segments: [Substring]) -> Bool {
        for (index, component) in components.enumerated() {
            if component == .recursiveWildcard { return true }
            guard index < segments.count, component ~= segments[index] else { return false }
        }
        return components.count == segments.count
    }
}
