package slack

import (
	"io"
	"net/http"
)

func ioCopy(w io.Writer, r *http.Response) (int64, error) { return io.Copy(w, r.Body) }
