package argocd_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"

	"ate.dev/orchestrator/deploy/gitops/argocd"
)

// argoLua runs a script as Argo CD runs a resource customization from
// argocd-cm (util/lua/lua.go, VM.runLuaWithResourceActionParameters, with
// gopher-lua, the interpreter Argo CD links): no standard library but
// package, base, table and a "safe" os of time and date only (string and
// math are absent, as they are unless argocd-cm sets
// resource.customizations.useOpenLibs for the kind), the object in the
// global obj, action parameters in actionParams, and one second to run.
// now is os.date's and os.time's clock.
type argoLua struct{ now func() time.Time }

func (e argoLua) run(t *testing.T, script string, obj map[string]any) (any, error) {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.OsLibName, func(l *lua.LState) int {
			l.Push(l.RegisterModule(lua.OsLibName, e.osFuncs()))
			return 1
		}},
	} {
		require.NoError(t, l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)))
	}
	// `local os = require("os")`, as Argo CD's built-in actions write it.
	l.PreloadModule(lua.OsLibName, func(l *lua.LState) int {
		l.Push(l.SetFuncs(l.NewTable(), e.osFuncs()))
		return 1
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("actionParams", l.NewTable())
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	return fromLua(l.Get(-1))
}

// osFuncs are Argo CD's util/lua/oslib_safe.go: os.time() and os.date(fmt)
// with C strftime's flags that it maps, "!" for UTC. Its other forms (a
// time table, a time argument, "*t") are not mimicked and fail here, so a
// script that starts using them is checked against Argo CD's code first.
func (e argoLua) osFuncs() map[string]lua.LGFunction {
	return map[string]lua.LGFunction{
		"time": func(l *lua.LState) int {
			if l.GetTop() != 0 {
				l.RaiseError("os.time with arguments is not mimicked")
			}
			l.Push(lua.LNumber(e.now().Unix()))
			return 1
		},
		"date": func(l *lua.LState) int {
			format := l.OptString(1, "%c")
			if l.GetTop() > 1 || strings.HasPrefix(strings.TrimPrefix(format, "!"), "*t") {
				l.RaiseError("os.date(%q) with a time or *t is not mimicked", format)
			}
			t := e.now().Local()
			if rest, ok := strings.CutPrefix(format, "!"); ok {
				t, format = t.UTC(), rest
			}
			l.Push(lua.LString(strftime(t, format)))
			return 1
		},
	}
}

// strftimeLayouts are the flags Argo CD's os.date maps to Go layouts
// (besides %w); any other flag is written as it is.
var strftimeLayouts = map[byte]string{
	'a': "mon", 'A': "Monday", 'b': "Jan", 'B': "January", 'c': "02 Jan 06 15:04 MST", 'd': "02",
	'F': "2006-01-02", 'H': "15", 'I': "03", 'm': "01", 'M': "04", 'p': "PM", 'P': "pm", 'S': "05",
	'x': "15/04/05", 'X': "15:04:05", 'y': "06", 'Y': "2006", 'z': "-0700", 'Z': "MST",
}

func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		switch {
		case c != '%' || i == len(format)-1:
			b.WriteByte(c)
		case format[i+1] == '%':
			b.WriteByte('%')
			i++
		default:
			i++
			if layout, ok := strftimeLayouts[format[i]]; ok {
				b.WriteString(t.Format(layout))
			} else if format[i] == 'w' {
				b.WriteString(strconv.Itoa(int(t.Weekday())))
			} else {
				b.WriteByte('%')
				b.WriteByte(format[i])
			}
		}
	}
	return b.String()
}

// toLua is Argo CD's decodeValue: the object as unstructured holds it.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, item := range v {
			t.RawSetH(lua.LString(k), toLua(l, item))
		}
		return t
	}
	return lua.LNil
}

// fromLua is what Argo CD's JSON encoding of a returned table
// (layeh.com/gopher-json) makes of it: a table with a sequence is an
// array, an empty one an empty array, any other a map of string keys.
func fromLua(v lua.LValue) (any, error) {
	switch v := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(v), nil
	case lua.LNumber:
		return float64(v), nil
	case lua.LString:
		return string(v), nil
	case *lua.LTable:
		if n := v.MaxN(); n > 0 {
			arr := make([]any, 0, n)
			for i := 1; i <= n; i++ {
				item, err := fromLua(v.RawGetInt(i))
				if err != nil {
					return nil, err
				}
				arr = append(arr, item)
			}
			return arr, nil
		}
		m := map[string]any{}
		var err error
		v.ForEach(func(k, item lua.LValue) {
			key, ok := k.(lua.LString)
			if !ok || err != nil {
				err = cmp.Or(err, fmt.Errorf("a table key %v that is not a string", k))
				return
			}
			m[string(key)], err = fromLua(item)
		})
		if len(m) == 0 && err == nil {
			return []any{}, nil
		}
		return m, err
	}
	return nil, fmt.Errorf("a %s Argo CD cannot read", v.Type())
}

// fixture reads a SandboxConfig of testdata as unstructured holds it.
func fixture(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var obj map[string]any
	require.NoError(t, yaml.Unmarshal(b, &obj))
	return obj
}

// installed reads the customization from argocd-cm.yaml, as Argo CD reads
// it from argocd-cm: the tests run what users install.
func installed(t *testing.T) (health string, actions argocd.Actions) {
	t.Helper()
	b, err := os.ReadFile("argocd-cm.yaml")
	require.NoError(t, err)
	var cm struct {
		Data map[string]string `json:"data"`
	}
	require.NoError(t, yaml.Unmarshal(b, &cm))
	require.Len(t, cm.Data, 2, "argocd-cm.yaml's keys")
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data[argocd.ActionsKey]), &actions), argocd.ActionsKey)
	require.NotEmpty(t, cm.Data[argocd.HealthKey], argocd.HealthKey)
	return cm.Data[argocd.HealthKey], actions
}
