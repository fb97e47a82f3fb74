import Foundation
import OfferErrors
import Yams

/// A value of the policy file with where it is: the path (`apps[0].products[1].offers[0].rules[2]`) and,
/// for YAML, the line and column. Every policy error points at one.
public struct PolicyNode: Sendable {
    /// The value.
    public enum Value: Sendable {
        case scalar(String)
        case list([PolicyNode])
        case map([(key: String, value: PolicyNode)])
        case null
    }

    public var value: Value
    /// Where in the document: `apps[0].products[1]`.
    public var path: String
    /// `line 12, column 7`, when known.
    public var position: String?

    /// `path (line L, column C)`.
    public var location: String {
        let shown = path.isEmpty ? "the top level" : path
        return position.map { "\(shown) (\($0))" } ?? shown
    }

    /// The most values a policy may hold, aliases counted at each place they are used: far above any real
    /// catalogue, and a bound on what a document of nested aliases (a "billion laughs") can make the parser build.
    public static let maximumValues = 100_000

    /// The most bytes the values' paths (`apps[0].products[1]…`, kept with each value for its errors) may add up to:
    /// the bound on what long keys repeated through aliases, or deep nesting, can make the paths weigh.
    public static let maximumPathBytes = 16 << 20

    /// What converting a document may still spend.
    struct Budget {
        var values = PolicyNode.maximumValues
        var pathBytes = PolicyNode.maximumPathBytes
    }

    /// Parses YAML (and so JSON, which is YAML) into nodes.
    /// - Throws: ``PolicyError`` naming the line of a syntax error, or saying the document holds more than
    ///   ``maximumValues`` values.
    public static func parse(_ text: String) throws(PolicyError) -> PolicyNode {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            throw PolicyError(.invalidPolicy, "the policy is not valid YAML or JSON: \(excerpt(String(describing: error)))")
        }
        guard let node else { throw PolicyError(.invalidPolicy, "the policy file is empty") }
        var budget = Budget()
        return try convert(node, path: "", budget: &budget)
    }

    /// The parser's message, short: its first lines, each cut at 160 characters (the context it quotes is a line of
    /// the document, which can be the whole of a one-line candidate).
    static func excerpt(_ message: String) -> String {
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false).prefix(6)
        return lines.map { $0.count > 160 ? "\($0.prefix(160))…" : String($0) }.joined(separator: "\n")
    }

    /// `node` as a ``PolicyNode``, spending a value and its path's bytes of `budget`.
    static func convert(_ node: Node, path: String, budget: inout Budget) throws(PolicyError) -> PolicyNode {
        budget.values -= 1
        budget.pathBytes -= path.utf8.count
        guard budget.pathBytes >= 0 else {
            throw PolicyError(
                .invalidPolicy,
                "the policy's keys are too long or nested too deep: the paths to its values add up to more than \(maximumPathBytes >> 20) MiB"
            )
        }
        guard budget.values >= 0 else {
            throw PolicyError(
                .invalidPolicy,
                """
                the policy holds more than \(maximumValues) values, counting each use of a YAML alias; a policy is far smaller — write repeated \
                parts out, or alias smaller ones
                """
            )
        }
        let position = node.mark.map { "line \($0.line), column \($0.column)" }
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain, ["null", "~", ""].contains(scalar.string) { return PolicyNode(value: .null, path: path, position: position) }
            return PolicyNode(value: .scalar(scalar.string), path: path, position: position)
        case .sequence(let sequence):
            var elements: [PolicyNode] = []
            for (offset, element) in sequence.enumerated() {
                elements.append(try convert(element, path: "\(path)[\(offset)]", budget: &budget))
            }
            return PolicyNode(value: .list(elements), path: path, position: position)
        case .mapping(let mapping):
            var entries: [(key: String, value: PolicyNode)] = []
            for pair in mapping {
                let key = pair.key.string ?? "(a key that is not text)"
                entries.append((key: key, value: try convert(pair.value, path: path.isEmpty ? key : "\(path).\(key)", budget: &budget)))
            }
            return PolicyNode(value: .map(entries), path: path, position: position)
        case .alias:
            return PolicyNode(value: .null, path: path, position: position)
        }
    }

    // MARK: typed access

    /// The entries of a map.
    public func map() throws(PolicyError) -> [(key: String, value: PolicyNode)] {
        switch value {
        case .map(let entries): return entries
        case .null: return []
        default: throw PolicyError(.invalidPolicy, "\(location): expected a map of names to values")
        }
    }

    /// The items of a list.
    public func list() throws(PolicyError) -> [PolicyNode] {
        switch value {
        case .list(let items): return items
        case .null: return []
        default: throw PolicyError(.invalidPolicy, "\(location): expected a list")
        }
    }

    /// A string.
    public func string() throws(PolicyError) -> String {
        guard case .scalar(let text) = value else { throw PolicyError(.invalidPolicy, "\(location): expected a string") }
        return text
    }

    /// The value for `key` in a map, or `nil`.
    public subscript(key: String) -> PolicyNode? {
        guard case .map(let entries) = value else { return nil }
        return entries.first { $0.key == key }?.value
    }

    /// Refuses keys outside `allowed`, so a typo (`offerIdentifer`) is an error, not a silent default.
    public func requireOnlyKeys(_ allowed: Set<String>) throws(PolicyError) {
        for entry in try map() where !allowed.contains(entry.key) {
            throw PolicyError(
                .invalidPolicy,
                "\(entry.value.location): unknown key '\(entry.key)'; expected one of \(allowed.sorted().joined(separator: ", "))"
            )
        }
    }
}

/// A problem in the policy file, with where it is.
public struct PolicyError: CodedError {
    /// `invalid_policy`: the file does not say something this service can enforce.
    public var code: Code
    /// What is wrong, starting with where.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension PolicyError {
    /// The codes of this error type: a closed set, each a case of ``Kind`` (``ErrorCode``).
    public struct Code: KindedErrorCode {
        /// Every code of this type: a code exists only as a case here, so a switch over `kind` is exhaustive.
        package enum Kind: String, CaseIterable, Sendable {
            case invalidPolicy = "invalid_policy"
        }

        /// Which code this is.
        package let kind: Kind

        package init(_ kind: Kind) { self.kind = kind }

        /// The policy file is not one this service can enforce (a syntax error, an unknown key or rule, a value out of
        /// range, a reference to nothing).
        public static let invalidPolicy = Self(.invalidPolicy)
    }
}
