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

    /// Parses YAML (and so JSON, which is YAML) into nodes.
    /// - Throws: ``PolicyError`` naming the line of a syntax error.
    public static func parse(_ text: String) throws(PolicyError) -> PolicyNode {
        let node: Node?
        do {
            node = try Yams.compose(yaml: text)
        } catch {
            throw PolicyError("the policy is not valid YAML or JSON: \(error)")
        }
        guard let node else { throw PolicyError("the policy file is empty") }
        return convert(node, path: "")
    }

    static func convert(_ node: Node, path: String) -> PolicyNode {
        let position = node.mark.map { "line \($0.line), column \($0.column)" }
        switch node {
        case .scalar(let scalar):
            if scalar.style == .plain, ["null", "~", ""].contains(scalar.string) { return PolicyNode(value: .null, path: path, position: position) }
            return PolicyNode(value: .scalar(scalar.string), path: path, position: position)
        case .sequence(let sequence):
            return PolicyNode(value: .list(sequence.enumerated().map { convert($0.element, path: "\(path)[\($0.offset)]") }), path: path, position: position)
        case .mapping(let mapping):
            return PolicyNode(value: .map(mapping.map { pair in
                let key = pair.key.string ?? "\(pair.key)"
                return (key: key, value: convert(pair.value, path: path.isEmpty ? key : "\(path).\(key)"))
            }), path: path, position: position)
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
        default: throw PolicyError("\(location): expected a map of names to values")
        }
    }

    /// The items of a list.
    public func list() throws(PolicyError) -> [PolicyNode] {
        switch value {
        case .list(let items): return items
        case .null: return []
        default: throw PolicyError("\(location): expected a list")
        }
    }

    /// A string.
    public func string() throws(PolicyError) -> String {
        guard case .scalar(let text) = value else { throw PolicyError("\(location): expected a string") }
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
            throw PolicyError("\(entry.value.location): unknown key '\(entry.key)'; expected one of \(allowed.sorted().joined(separator: ", "))")
        }
    }
}

/// A problem in the policy file, with where it is.
public struct PolicyError: CodedError {
    /// The stable codes of this error type.
    public typealias Code = ErrorCode<PolicyError>
    /// `invalid_policy`: the file does not say something this service can enforce.
    public var code: Code
    /// What is wrong, starting with where.
    public var message: String

    public init(_ message: String, code: Code = .invalidPolicy) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

extension ErrorCode where Domain == PolicyError {
    /// The policy file is not one this service can enforce (a syntax error, an unknown key or rule, a value out of
    /// range, a reference to nothing).
    public static var invalidPolicy: Self { Self("invalid_policy") }
}
