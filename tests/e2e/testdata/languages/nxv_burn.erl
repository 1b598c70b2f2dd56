%% The language coverage test's Erlang program: burns CPU in nxv_hot for the
%% number of seconds given as its argument (erl -s nxv_burn main SECONDS).
-module(nxv_burn).
-export([main/1]).

nxv_hot(0, X) -> X;
nxv_hot(N, X) -> nxv_hot(N - 1, (X * 48271 + 11) rem 2147483647).

loop(End) ->
    case erlang:monotonic_time(millisecond) < End of
        true -> _ = nxv_hot(200000, 1), loop(End);
        false -> ok
    end.

main([Secs]) ->
    End = erlang:monotonic_time(millisecond) + list_to_integer(atom_to_list(Secs)) * 1000,
    loop(End),
    init:stop().
