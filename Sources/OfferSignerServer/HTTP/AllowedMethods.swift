import HTTPTypes
import Hummingbird
import Synchronization

/// The methods each registered path accepts, so that a request for a known path with another method gets 405
/// with `Allow` instead of 404. Filled once the router's routes are registered (``buildRouter``); read by
/// ``ErrorMappingMiddleware`` when routing finds nothing.
final class AllowedMethods: Sendable {
    private let table = Mutex<[(segments: [Substring], methods: Set<String>)]>([])

    /// Records the router's routes (`/admin/keys/:keyIdentifier/activate` style paths).
    func record(_ routes: [(path: String, method: String)]) {
        var grouped: [String: Set<String>] = [:]
        for route in routes {
            grouped[route.path, default: []].insert(route.method)
            if route.method == "GET" { grouped[route.path, default: []].insert("HEAD") }  // the router's generated HEAD
        }
        let rows = grouped.map { (segments: $0.key.split(separator: "/"), methods: $0.value) }
        table.withLock { $0 = rows }
    }

    /// The methods `path` accepts, sorted (empty: no route has this path).
    func methods(for path: String) -> [String] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        return table.withLock { rows in
            var methods: Set<String> = []
            for row in rows where row.segments.count == segments.count
                && zip(row.segments, segments).allSatisfy({ pattern, segment in pattern.hasPrefix(":") || pattern == segment }) {
                methods.formUnion(row.methods)
            }
            return methods.sorted()
        }
    }
}
