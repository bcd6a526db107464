package markdown

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
)

// lexerFiles are chroma's XML lexers for the languages people paste most
// in a coding assistant, copied from the chroma module (lexers/README.md
// says which version). We do not import chroma/v2/lexers: its package init
// parses all of its ~280 lexers, about 11 ms and 2.7 MB in every
// claude-relay process (the editor helper, run, acp), while only the
// dashboard's Markdown endpoint ever highlights.
//
//go:embed lexers/*.xml
var lexerFiles embed.FS

// lexerRegistry is built on the first highlight, not at init. Loading
// reads only each file's <config>; chroma reads and compiles a lexer's
// rules the first time it tokenises. The registry also resolves the XML
// lexers' references to each other (HTML uses CSS and JavaScript, Docker
// and Makefile use Bash, Docker uses JSON), so those must be here too.
var lexerRegistry = sync.OnceValues(loadLexers)

// loadLexers registers our Go lexer and every embedded XML lexer. A file
// that fails to load is left out and reported; TestLexersLoad keeps that
// from shipping.
func loadLexers() (*chroma.LexerRegistry, error) {
	reg := chroma.NewLexerRegistry()
	reg.Register(goLexer())
	paths, err := fs.Glob(lexerFiles, "lexers/*.xml")
	if err != nil {
		return reg, fmt.Errorf("listing the embedded lexers: %w", err)
	}
	var errs []error
	for _, path := range paths {
		l, err := chroma.NewXMLLexer(lexerFiles, path)
		if err != nil {
			errs = append(errs, fmt.Errorf("loading embedded lexer %s: %w", path, err))
			continue
		}
		reg.Register(l)
	}
	return reg, errors.Join(errs...)
}

// lexerFor returns the lexer for a fenced code block's language: a lexer
// name, alias or file extension ("python", "py", "yml", "cpp", "golang"),
// in any case; nil when there is none.
func lexerFor(lang string) chroma.Lexer {
	lang = strings.TrimSpace(lang)
	if lang == "" {
		return nil
	}
	reg, _ := lexerRegistry() // a lexer that failed to load is simply absent
	if l := reg.Get(lang); l != nil {
		return l
	}
	// Get lower-cases names and aliases itself, but matches file name
	// patterns ("*.yml") as given: "YML" needs this second try.
	return reg.Get(strings.ToLower(lang))
}

// goLexer highlights Go. Chroma's own Go lexer is Go code inside
// chroma/v2/lexers, which we must not import (see lexerFiles).
func goLexer() chroma.Lexer {
	return chroma.MustNewLexer(&chroma.Config{
		Name:      "Go",
		Aliases:   []string{"go", "golang"},
		Filenames: []string{"*.go"},
		MimeTypes: []string{"text/x-go"},
	}, goRules)
}

// Fragments of Go's lexical grammar.
const (
	// goIdentRe is an identifier: the spec allows any Unicode letter.
	goIdentRe = `[\p{L}_][\p{L}\p{Nd}_]*`
	// goEscapeRe is an escape sequence in an interpreted string or a rune.
	goEscapeRe = `\\(?:[abfnrtv\\'"]|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{3})`
	// goExpRe is a decimal exponent; an imaginary literal ends in i.
	goExpRe = `[eE][+-]?[0-9][0-9_]*`
)

// goRules reads code as it is pasted, not as the compiler would: an
// unterminated comment or string runs to the end of the block (of the
// line, for an interpreted string), and a character Go has no use for is
// plain text rather than an error.
func goRules() chroma.Rules {
	return chroma.Rules{
		"root": {
			{Pattern: `\s+`, Type: chroma.TextWhitespace},
			{Pattern: `//[^\n]*`, Type: chroma.CommentSingle},
			{Pattern: `/\*[\s\S]*?(?:\*/|\z)`, Type: chroma.CommentMultiline},
			{Pattern: "`[^`]*`?", Type: chroma.LiteralStringBacktick},
			{Pattern: `"`, Type: chroma.LiteralStringDouble, Mutator: chroma.Push("string")},
			{Pattern: `'(?:` + goEscapeRe + `|[^'\\\n])'`, Type: chroma.LiteralStringChar},
			// Numbers, the longer forms first; "_" may separate digits.
			{Pattern: `0[xX][0-9A-Fa-f_]*(?:\.[0-9A-Fa-f_]*)?[pP][+-]?[0-9_]+i?`, Type: chroma.LiteralNumberFloat},
			{Pattern: `0[xX][0-9A-Fa-f_]+i?`, Type: chroma.LiteralNumberHex},
			{Pattern: `0[bB][01_]+i?`, Type: chroma.LiteralNumberBin},
			{Pattern: `0[oO][0-7_]+i?`, Type: chroma.LiteralNumberOct},
			{Pattern: `(?:[0-9][0-9_]*\.[0-9_]*|\.[0-9][0-9_]*)(?:` + goExpRe + `)?i?|[0-9][0-9_]*` + goExpRe + `i?`, Type: chroma.LiteralNumberFloat},
			{Pattern: `0[0-7_]+\b`, Type: chroma.LiteralNumberOct}, // 0755, the old spelling
			{Pattern: `[0-9][0-9_]*i?`, Type: chroma.LiteralNumberInteger},
			// The name a declaration introduces.
			{Pattern: `(package)(\s+)(` + goIdentRe + `)`, Type: chroma.ByGroups(chroma.KeywordNamespace, chroma.TextWhitespace, chroma.NameNamespace)},
			{Pattern: `(type)(\s+)(` + goIdentRe + `)`, Type: chroma.ByGroups(chroma.KeywordDeclaration, chroma.TextWhitespace, chroma.NameClass)},
			// A word before "(" is a call or a declared function, unless
			// it is a keyword or a type conversion.
			{Pattern: goIdentRe + `(?=[ \t]*\()`, Type: goWord(true)},
			{Pattern: goIdentRe, Type: goWord(false)},
			{Pattern: `(?:<<|>>|&\^|[-+*/%&|^<>=!:])=|<<|>>|&\^|&&|\|\||<-|\+\+|--|\.\.\.|[-+*/%&|^<>=!~]`, Type: chroma.Operator},
			{Pattern: `[()\[\]{},;.:]`, Type: chroma.Punctuation},
			{Pattern: `.`, Type: chroma.Text},
		},
		"string": {
			{Pattern: `"`, Type: chroma.LiteralStringDouble, Mutator: chroma.Pop(1)},
			{Pattern: goEscapeRe, Type: chroma.LiteralStringEscape},
			{Pattern: `[^"\\\n]+`, Type: chroma.LiteralStringDouble},
			{Pattern: `\\`, Type: chroma.LiteralStringDouble}, // not a valid escape: part of the string
			{Pattern: `\n`, Type: chroma.TextWhitespace, Mutator: chroma.Pop(1)},
		},
	}
}

// goWord emits an identifier as a keyword, a predeclared name, a function
// (call says it is followed by "(") or a plain name.
func goWord(call bool) chroma.Emitter {
	return chroma.EmitterFunc(func(groups []string, _ *chroma.LexerState) chroma.Iterator {
		word := groups[0]
		t := goWordType(word)
		switch {
		case t != chroma.Name:
		case call && goBuiltinFunc(word):
			t = chroma.NameBuiltin
		case call:
			t = chroma.NameFunction
		}
		return chroma.Literator(chroma.Token{Type: t, Value: word})
	})
}

// goWordType classifies Go's keywords and its predeclared types and
// constants, which read the same wherever they stand ("int(x)" is a
// conversion, not a call); any other word is a Name. A switch, not a map,
// so that nothing is built at init.
func goWordType(word string) chroma.TokenType {
	switch word {
	case "package", "import":
		return chroma.KeywordNamespace
	case "const", "func", "type", "var", "chan", "interface", "map", "struct":
		return chroma.KeywordDeclaration
	case "break", "case", "continue", "default", "defer", "else", "fallthrough",
		"for", "go", "goto", "if", "range", "return", "select", "switch":
		return chroma.Keyword
	case "true", "false", "iota", "nil":
		return chroma.KeywordConstant
	case "any", "bool", "byte", "comparable", "complex64", "complex128", "error",
		"float32", "float64", "int", "int8", "int16", "int32", "int64", "rune", "string",
		"uint", "uint8", "uint16", "uint32", "uint64", "uintptr":
		return chroma.KeywordType
	}
	return chroma.Name
}

// goBuiltinFunc reports whether word is a predeclared function. Those are
// marked only when called: "len" or "max" alone is as likely a variable.
func goBuiltinFunc(word string) bool {
	switch word {
	case "append", "cap", "clear", "close", "complex", "copy", "delete", "imag", "len",
		"make", "max", "min", "new", "panic", "print", "println", "real", "recover":
		return true
	}
	return false
}
