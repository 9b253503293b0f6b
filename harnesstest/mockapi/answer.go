package mockapi

import "net/http"

// What the three API servers (anthropic.go, responses.go, gemini.go) share
// once each has read its request into a Request record: writing a JSON
// answer or an error in the API's own shape, and the scripted reply with
// the tool call it makes.

// errorBody is an API's error object for status and msg (anthropicError,
// responsesError, geminiError).
type errorBody func(status int, msg string) obj

// answerJSON writes v as the answer with status, and returns the record
// with that status.
func (rec *Request) answerJSON(w http.ResponseWriter, status int, v any) Request {
	rec.Status = status
	writeJSON(w, status, v)
	return *rec
}

// answerError writes the API's error object (body) for status and msg as
// the answer, and returns the record with that status.
func (rec *Request) answerError(w http.ResponseWriter, status int, body errorBody, msg string) Request {
	return rec.answerJSON(w, status, body(status, msg))
}

// scripted is the script's answer to rec, whose Kind, Prompt and
// ToolResults are set: the Reply (on a tool's result, with the text to
// say after the tool) and the tool call it makes (nil: none; a Reply.Tool
// on a prompt is Shell(Tool), an Agent's its next step). ok false: the
// rule fails this request, and its error (body) is written already. rec's
// Status is set either way.
func (s *Server) scripted(w http.ResponseWriter, rec *Request, body errorBody) (reply Reply, call *ToolCall, ok bool) {
	reply, fail := s.reply(rec.Prompt)
	if fail {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = "mockapi: scripted failure"
		}
		rec.answerError(w, reply.Status, body, msg)
		return reply, nil, false
	}
	rec.Status = http.StatusOK
	switch {
	case reply.Agent != nil:
		call, reply.Text = agentStep(reply, rec.Prompt, rec.ToolResults)
	case rec.Kind == KindPrompt && reply.Tool != "":
		c := Shell(reply.Tool)
		call = &c
	case rec.Kind == KindToolResult && reply.Tool != "":
		reply.Text = reply.afterTool(*rec)
	}
	return reply, call, true
}

// modelOr is the request's model, "mock-model" when it names none.
func modelOr(model string) string {
	if model == "" {
		return "mock-model"
	}
	return model
}
