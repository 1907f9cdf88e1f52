// argo-health runs an Argo CD resource health script the way Argo CD does: gopher-lua (the
// interpreter Argo CD embeds), the same standard libraries, the object decoded from JSON into
// the global `obj`, and the table the script returns printed back as JSON.
//
// Usage: argo-health <script.lua> < object.json   ->   {"status":"Healthy","message":"..."}
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	lua "github.com/yuin/gopher-lua"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: argo-health <script.lua> < object.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	var obj map[string]interface{}
	if err := json.Unmarshal(raw, &obj); err != nil {
		fail(fmt.Errorf("object: %w", err))
	}
	out, err := run(string(script), obj)
	if err != nil {
		fail(err)
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "argo-health:", err)
	os.Exit(1)
}

// run mirrors Argo CD's VM (util/lua): SkipOpenLibs, then only the safe libraries it opens, so a
// script that needs os or io fails here as it would in Argo CD.
func run(script string, obj map[string]interface{}) (map[string]interface{}, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.CoroutineLibName, lua.OpenCoroutine},
	} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", decode(l, obj))
	if err := l.DoString(script); err != nil {
		return nil, err
	}
	ret := l.Get(-1)
	table, ok := ret.(*lua.LTable)
	if !ok {
		return nil, fmt.Errorf("the script returned %s, not a table", ret.Type())
	}
	out := map[string]interface{}{}
	table.ForEach(func(k, v lua.LValue) { out[k.String()] = encode(v) })
	return out, nil
}

// decode turns JSON values into Lua values as Argo CD's decodeValue does: objects and arrays
// become tables (arrays 1-based), numbers LNumber, null nil.
func decode(l *lua.LState, v interface{}) lua.LValue {
	switch x := v.(type) {
	case map[string]interface{}:
		t := l.NewTable()
		for k, item := range x {
			t.RawSetString(k, decode(l, item))
		}
		return t
	case []interface{}:
		t := l.NewTable()
		for _, item := range x {
			t.Append(decode(l, item))
		}
		return t
	case string:
		return lua.LString(x)
	case float64:
		return lua.LNumber(x)
	case bool:
		return lua.LBool(x)
	default:
		return lua.LNil
	}
}

func encode(v lua.LValue) interface{} {
	switch x := v.(type) {
	case lua.LString:
		return string(x)
	case lua.LNumber:
		return float64(x)
	case lua.LBool:
		return bool(x)
	case *lua.LTable:
		m := map[string]interface{}{}
		x.ForEach(func(k, item lua.LValue) { m[k.String()] = encode(item) })
		return m
	default:
		return nil
	}
}
