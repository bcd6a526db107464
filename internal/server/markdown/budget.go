package markdown

import "strings"

// The render budget: what Render checks in one cheap pass before goldmark
// sees the text. Goldmark is linear on the Markdown people write but
// quadratic on some inputs (several of CommonMark's known pathological
// cases and a few of its own): 250 KB of ">" took 31 s to render, of "[a]("
// 25 s, and 16 KB of a 1000-column table over short lines 5 s and 70 MB of
// HTML. Each limit below bounds one such pattern by counting, on the safe
// side, the work goldmark would do for it; the inputs, measured, are in
// budget_test.go, and each limit is far above what real text reaches (at
// the limits, a render of MaxInput bytes took at most 300 ms here). Text
// over any limit is shown escaped in a <pre>, unparsed; Pool's deadline
// covers what this misses.
const (
	// MaxInput is the longest text parsed as Markdown, in bytes: three times
	// the 65536 UTF-16 units the dashboard asks the server to render
	// (session.js MD_MAX), the most bytes such text takes in UTF-8.
	MaxInput = 3 << 16

	// maxNesting bounds the block quotes and list items open on a line.
	// Goldmark's work for each container marker grows with the line's
	// length, so ">>>>…" or "- - - - a" is quadratic; prose nests a few
	// levels.
	maxNesting = 16

	// maxLinkScan bounds the bytes goldmark rescans for link destinations
	// and titles. After each "](" it reads on to the end of the destination
	// (whitespace or an unbalanced ')'), of an angle-bracket one ('>' or the
	// line's end) and of a title (its closing or another opening quote or
	// parenthesis), and when the link does not close, the next "](" reads
	// it all again: "[a](" repeated.
	maxLinkScan = 1 << 24

	// maxEmphasis bounds the sum over paragraphs of their "*", "_" and "~"
	// runs times those of them that may close: for every closer goldmark
	// walks back over all the delimiters still open, so "*a_ " repeated is
	// quadratic.
	maxEmphasis = 1 << 25

	// maxBrackets bounds the work of closing nested "[": each "]" walks
	// what its label holds.
	maxBrackets = 1 << 24

	// maxLineScan bounds link labels and reference definitions times the
	// lines of their paragraph: goldmark finds a label's text by walking
	// the paragraph's lines back from the last, and cuts each definition
	// out of the line list by copying the rest, so "x [a] y" on line after
	// line is quadratic.
	maxLineScan = 1 << 24

	// maxTableCells bounds table cells: goldmark pads every row to the
	// header's width, so a wide header over many short lines is a small
	// input with a huge tree and output.
	maxTableCells = 1 << 16

	// maxOutput bounds the HTML of one render, in bytes (limit.go):
	// reference links repeat their destination at every use, so "[x]"
	// ten thousand times after a long "[x]: " definition is an output
	// bomb. Highlighted code, the most verbose legitimate output, is about
	// 18 times its text: 3.3 MB for MaxInput bytes of dense Go.
	maxOutput = 8 << 20
)

// overBudget names the limit text exceeds, or is "" when goldmark may
// parse it. It reads text once and allocates little (short stacks of list
// items and open brackets): about 1% of a render.
func overBudget(text string) string {
	if len(text) > MaxInput {
		return "input size"
	}
	var s budgetScan
	for line := range strings.Lines(text) {
		if why := s.line(line); why != "" {
			return why
		}
	}
	return s.endParagraph()
}

// budgetScan is overBudget's state: costs summed over the whole text, and
// work pending in the current line or paragraph. Paragraph ends are
// approximated on the safe side: a blank line, or a line that starts a list
// item, a heading or a fence; any other line continues the paragraph, so
// one here is never shorter than goldmark's.
type budgetScan struct {
	pos int // of the current byte in the text

	items     []int // content columns of the list items open, innermost last
	prevBlank bool

	// Link destinations and titles still being read, one per "](" whose
	// scan has not reached where goldmark would stop it.
	plainDest, angleDest                    int
	destParens                              int // '(' since the plain destinations opened, less ')'
	quoteTitle, apostropheTitle, parenTitle int
	titleNext                               int // destinations ended by whitespace: a title may follow
	linkScan                                int

	runs, closers, emphasis int   // "*", "_" or "~" runs in the paragraph, those that may close
	open                    []int // positions of the open "[", innermost last
	dropped                 int   // open "[" whose positions were forgotten
	paragraph               int   // where the paragraph starts
	brackets                int
	lines, refLines, labels int // in the paragraph: lines, those starting with '[', "]" closing a "["
	lineScan                int
	tableCols, cells        int // tableCols: the width of the table being read
}

// line scans one line, newline included.
func (s *budgetScan) line(line string) string {
	start := s.pos
	i, item, nested := s.containers(line)
	if nested {
		return "nesting"
	}
	rest := strings.TrimRight(line[i:], " \t\r\n")
	blank := rest == ""
	if blank || item || strings.HasPrefix(rest, "#") || strings.HasPrefix(rest, "```") || strings.HasPrefix(rest, "~~~") {
		if why := s.endParagraph(); why != "" {
			return why
		}
	}
	s.prevBlank = blank
	if blank {
		s.tableCols = 0 // only a blank line surely ends a table
		s.pos = start + len(line)
		return ""
	}
	s.lines++
	if rest[0] == '[' {
		s.refLines++
	}
	if s.tableCols > 0 {
		s.cells += s.tableCols
	} else if cols := delimiterRow(rest); cols > 0 {
		s.tableCols = cols
		s.cells += 2 * cols // the header and this row
	}
	if s.cells > maxTableCells {
		return "table cells"
	}
	s.pos = start + i
	return s.inline(line[i:])
}

// containers reads the block quote and list markers that open line: i is
// where its text starts, item whether a list item starts here, nested
// whether more containers than maxNesting are open. Columns count a tab
// to the next multiple of 4, as goldmark does, so tabs cannot hide depth.
func (s *budgetScan) containers(line string) (i int, item, nested bool) {
	col, quotes := 0, 0
	checkedBreak := false
	for {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			if line[i] == '\t' {
				col += 4 - col%4
			} else {
				col++
			}
			i++
		}
		if i == len(line) {
			return i, item, false
		}
		width := listMarker(line, i)
		if width > 0 && !checkedBreak {
			// "- - -" and "* * *" are thematic breaks, not items; checked
			// once a line, which keeps the scan linear.
			checkedBreak = true
			if thematicBreak(line[i:]) {
				width = 0
			}
		}
		switch {
		case line[i] == '>':
			quotes++
			i++
			col++
		case width > 0:
			if !item {
				s.closeItems(col) // a marker here is outside the items indented more
			}
			item = true
			i += width
			col += width
			s.items = append(s.items, col+1)
		default:
			if !item && s.prevBlank {
				s.closeItems(col) // text after a blank line is outside the items indented more
			}
			return i, item, false
		}
		if quotes+len(s.items) > maxNesting {
			return i, item, true
		}
	}
}

// listMarker returns the width of the list item marker ("-", "*", "+",
// "1.", "1)") that line has at i, or 0.
func listMarker(line string, i int) int {
	switch c := line[i]; {
	case c == '-' || c == '*' || c == '+':
		if spaceOrEnd(line, i+1) {
			return 1
		}
	case c >= '0' && c <= '9':
		j := i
		for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
			j++
		}
		if j < len(line) && (line[j] == '.' || line[j] == ')') && spaceOrEnd(line, j+1) {
			return j + 1 - i
		}
	}
	return 0
}

// closeItems forgets the list items whose content is indented past col.
func (s *budgetScan) closeItems(col int) {
	for len(s.items) > 0 && s.items[len(s.items)-1] > col {
		s.items = s.items[:len(s.items)-1]
	}
}

// inline scans the text of a line after its container markers.
func (s *budgetScan) inline(text string) string {
	backslashes := 0 // just before c
	for j := 0; j < len(text); j, s.pos = j+1, s.pos+1 {
		c := text[j]
		s.linkScan += s.plainDest + s.angleDest + s.quoteTitle + s.apostropheTitle + s.parenTitle
		escaped := backslashes%2 == 1 && isPunct(c) // goldmark reads "\]" and the like as text
		if c == '\\' {
			backslashes++
		} else {
			backslashes = 0
		}
		switch {
		case escaped:
		case c == '\\':
		default:
			s.special(text, j)
		}
		if j+1 < len(text) && text[j] == ']' && text[j+1] == '(' && !escaped {
			j, s.pos = j+1, s.pos+1 // the '(' is the link's, not the destination's
		}
		if !isSpace(c) {
			s.titleNext = 0 // a title opens right after its destination or not at all
		}
	}
	switch {
	case s.linkScan > maxLinkScan:
		return "link destinations"
	case s.brackets > maxBrackets:
		return "brackets"
	}
	return ""
}

// special counts what the byte text[j] may start or end.
func (s *budgetScan) special(text string, j int) {
	switch c := text[j]; c {
	case ' ', '\t', '\n', '\r':
		// Destinations end here and may go on to read a title.
		s.titleNext += s.plainDest
		s.plainDest, s.destParens = 0, 0
		if c == '\n' || c == '\r' {
			s.angleDest = 0
		}
	case '>':
		s.angleDest = 0
	case '"':
		s.quoteTitle = s.opensTitle()
	case '\'':
		s.apostropheTitle = s.opensTitle()
	case '(':
		s.parenTitle = s.opensTitle() // a title ends at the next '(' too
		s.destParens++
	case ')':
		s.parenTitle = 0
		if s.destParens == 0 {
			s.plainDest = 0 // unbalanced: every destination read so far ends here
		} else {
			s.destParens--
		}
	case '[':
		s.openBracket()
	case ']':
		s.closeBracket()
		if j+1 < len(text) && text[j+1] == '(' {
			if strings.HasPrefix(strings.TrimLeft(text[j+2:], " \t"), "<") {
				s.angleDest++
			} else {
				if s.plainDest == 0 {
					s.destParens = 0
				}
				s.plainDest++
			}
		}
	case '*', '_', '~':
		if j > 0 && text[j-1] == c {
			break // inside a run
		}
		s.runs++
		if closes(text, j) {
			s.closers++
		}
	}
}

// maxOpenBrackets bounds the positions of open "[" kept: past it the
// oldest are counted as opening the paragraph, which overcharges them.
const maxOpenBrackets = 1024

func (s *budgetScan) openBracket() {
	if len(s.open) == maxOpenBrackets {
		s.open = s.open[1:]
		s.dropped++
	}
	s.open = append(s.open, s.pos)
}

// closeBracket charges a "]" that closes a label the bytes since its "[":
// goldmark walks what the label holds to check it has no link inside.
func (s *budgetScan) closeBracket() {
	switch {
	case len(s.open) > 0:
		s.brackets += s.pos - s.open[len(s.open)-1]
		s.open = s.open[:len(s.open)-1]
	case s.dropped > 0:
		s.brackets += s.pos - s.paragraph
		s.dropped--
	default:
		return
	}
	s.labels++
}

// opensTitle returns the destinations whose title opens at this byte, and
// forgets them.
func (s *budgetScan) opensTitle() int {
	n := s.titleNext
	s.titleNext = 0
	return n
}

// closes reports whether the delimiter run starting at text[j] may close
// emphasis, on the safe side of CommonMark's flanking rules: it follows
// something other than whitespace, and an "_" also does not precede a
// letter or digit (snake_case never closes).
func closes(text string, j int) bool {
	if j == 0 || isSpace(text[j-1]) {
		return false
	}
	if text[j] != '_' {
		return true
	}
	k := j
	for k < len(text) && text[k] == '_' {
		k++
	}
	return k == len(text) || !isAlnum(text[k])
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// isPunct reports whether c is ASCII punctuation, what a backslash escapes.
func isPunct(c byte) bool { return c > ' ' && c < 0x7f && !isAlnum(c) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// endParagraph charges the work that a paragraph's end settles (emphasis,
// labels and definitions), and ends the titles still open.
func (s *budgetScan) endParagraph() string {
	s.emphasis += s.closers * s.runs
	s.lineScan += (s.labels + s.refLines) * s.lines
	s.runs, s.closers, s.lines, s.refLines, s.labels = 0, 0, 0, 0, 0
	s.open, s.dropped, s.paragraph = s.open[:0], 0, s.pos
	s.quoteTitle, s.apostropheTitle, s.parenTitle, s.titleNext = 0, 0, 0, 0
	switch {
	case s.emphasis > maxEmphasis:
		return "emphasis"
	case s.lineScan > maxLineScan:
		return "paragraph lines"
	}
	return ""
}

func spaceOrEnd(line string, i int) bool { return i >= len(line) || isSpace(line[i]) }

// thematicBreak reports whether line is only one of '-', '*' or '_' (at
// least three) and spaces.
func thematicBreak(line string) bool {
	line = strings.TrimRight(line, " \t\r\n")
	n := 0
	for i := range len(line) {
		switch line[i] {
		case line[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// delimiterRow returns the most columns a table delimiter row ("|---|:-:|")
// can have, or 0 when line is not one.
func delimiterRow(line string) int {
	if !strings.Contains(line, "-") || !strings.Contains(line, "|") {
		return 0
	}
	if strings.Trim(line, "|-: \t") != "" {
		return 0
	}
	return strings.Count(line, "|") + 1
}
