// RUN: mixprec-opt --split-input-file --verify-diagnostics %s

// The module-state convention (GraphBase.td, mp.state): one broken rule per
// chunk, each error naming the state. The last chunk is valid.

// A state needs its initial value.
// expected-error @+1 {{state 'w' (argument #0): no 'mp.state_init' initial value}}
func.func @no_init(%w: tensor<4xf32> {mp.state = "w"}) -> (tensor<4xf32> {mp.state_update = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// The initial value has the argument's type.
// expected-error @+1 {{state 'w': initial value is 'tensor<2xf32>', the argument is 'tensor<4xf32>'}}
func.func @init_type(%w: tensor<4xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<2xf32>})
    -> (tensor<4xf32> {mp.state_update = "w"}) {
  return %w : tensor<4xf32>
}

// -----

// mp.state_init without a state name.
// expected-error @+1 {{argument #0 has 'mp.state_init' but no 'mp.state' name}}
func.func @init_alone(%w: tensor<4xf32> {mp.state_init = dense<1.0> : tensor<4xf32>}) -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// The name is a non-empty string.
// expected-error @+1 {{argument #0: 'mp.state' must be a non-empty string attribute (the state's name)}}
func.func @name_not_string(%w: tensor<4xf32> {mp.state = 3 : i64, mp.state_init = dense<1.0> : tensor<4xf32>})
    -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// Every state has an update.
// expected-error @+1 {{state 'w' (argument #0): no result carries 'mp.state_update = "w"' (its next value)}}
func.func @no_update(%w: tensor<4xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<4xf32>})
    -> tensor<4xf32> {
  return %w : tensor<4xf32>
}

// -----

// Exactly one.
// expected-error @+1 {{state 'w' (argument #0): updated by more than one result (#1 again)}}
func.func @two_updates(%w: tensor<4xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<4xf32>})
    -> (tensor<4xf32> {mp.state_update = "w"}, tensor<4xf32> {mp.state_update = "w"}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// The update has the state's type.
// expected-error @+1 {{state 'w' (argument #0): its update (result #0) is 'tensor<4xbf16>', the state is 'tensor<4xf32>'}}
func.func @update_type(%w: tensor<4xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<4xf32>})
    -> (tensor<4xbf16> {mp.state_update = "w"}) {
  %0 = mp.cast %w : tensor<4xf32> -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// Names are unique.
// expected-error @+1 {{state 'w' (argument #0): argument #1 has the same name}}
func.func @same_name(%a: tensor<4xf32> {mp.state = "w", mp.state_init = dense<1.0> : tensor<4xf32>},
                     %b: tensor<4xf32> {mp.state = "w", mp.state_init = dense<2.0> : tensor<4xf32>})
    -> (tensor<4xf32> {mp.state_update = "w"}) {
  return %a : tensor<4xf32>
}

// -----

// An update names a state.
// expected-error @+1 {{result #0 updates state 'v', which no argument is (no argument has mp.state = "v")}}
func.func @unknown_state(%x: tensor<4xf32>) -> (tensor<4xf32> {mp.state_update = "v"}) {
  return %x : tensor<4xf32>
}

// -----

// Unknown mp.* argument attributes are rejected too.
// expected-error @+1 {{unknown mp dialect attribute 'mp.stat'}}
func.func @unknown_arg_attr(%x: tensor<4xf32> {mp.stat = "w"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// Valid: a state, its initial value (dense_resource too), its update.
func.func @valid(%x: tensor<2xf32> {mp.name = "x"},
                 %w: tensor<2xf32> {mp.state = "w", mp.state_init = dense<[1.0, 2.0]> : tensor<2xf32>})
    -> (tensor<2xf32> {mp.name = "y"}, tensor<2xf32> {mp.state_update = "w"}) {
  %0 = mp.add %x, %w : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  return %0, %0 : tensor<2xf32>, tensor<2xf32>
}
